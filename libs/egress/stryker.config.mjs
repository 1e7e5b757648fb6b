import { mutationConfig } from '../../tools/mutation/base-config.mjs';

// The Retry-After parser, read by every connector and vendor request, and the address policy,
// which decides every connection to a host a tenant chose: both pure.
export default mutationConfig({
  dir: 'libs/egress',
  mutate: ['libs/egress/src/retry-after.ts', 'libs/egress/src/address-policy.ts'],
  tests: ['src/retry-after.test.ts', 'src/address-policy.test.ts'],
  breakAt: 100,
});
