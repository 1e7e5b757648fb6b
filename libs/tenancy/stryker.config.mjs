import { mutationConfig } from '../../tools/mutation/base-config.mjs';

// Allowed-origin matching of /collect (the control plane normalizes the list it stores).
export default mutationConfig({
  dir: 'libs/tenancy',
  mutate: ['libs/tenancy/src/origin-match.ts'],
  tests: ['src/origin-match.test.ts'],
  breakAt: 80,
});
