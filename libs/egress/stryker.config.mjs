import { mutationConfig } from '../../tools/mutation/base-config.mjs';

// The Retry-After parser: pure, and read by every connector and vendor request.
export default mutationConfig({
  dir: 'libs/egress',
  mutate: ['libs/egress/src/retry-after.ts'],
  tests: ['src/retry-after.test.ts'],
  breakAt: 80,
});
