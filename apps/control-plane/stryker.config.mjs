import { mutationConfig } from '../../tools/mutation/base-config.mjs';

// Allowed-origin normalization of write keys (what /collect later matches, libs/tenancy), and
// the sync jobs' retry backoff (when the work queue may claim a failed job again).
export default mutationConfig({
  dir: 'apps/control-plane',
  mutate: [
    'apps/control-plane/src/write-keys/allowed-origins.ts',
    'apps/control-plane/src/jobs/retry-backoff.ts',
  ],
  tests: ['src/write-keys/allowed-origins.test.ts', 'src/jobs/retry-backoff.test.ts'],
  breakAt: 80,
});
