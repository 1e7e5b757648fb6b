import { mutationConfig } from '../../tools/mutation/base-config.mjs';

// Allowed-origin normalization of write keys (what /collect later matches, libs/tenancy).
export default mutationConfig({
  dir: 'apps/control-plane',
  mutate: ['apps/control-plane/src/write-keys/allowed-origins.ts'],
  tests: ['src/write-keys/allowed-origins.test.ts'],
  breakAt: 80,
});
