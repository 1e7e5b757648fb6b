import { functionRanges, mutationConfig } from '../../tools/mutation/base-config.mjs';

// Allowed-origin matching of /collect (the control plane normalizes the list it stores), and the
// key every per-address limit counts a client under (an IPv6 client by its /64).
export default mutationConfig({
  dir: 'libs/tenancy',
  mutate: [
    'libs/tenancy/src/origin-match.ts',
    ...functionRanges('libs/tenancy/src/client-address.ts', ['addressLimitKey']),
  ],
  tests: ['src/origin-match.test.ts', 'src/client-address.test.ts'],
  breakAt: 80,
});
