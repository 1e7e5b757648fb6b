import { functionRanges, mutationConfig } from '../../tools/mutation/base-config.mjs';

// The rate-limit arithmetic that runs in this process: fixed windows per second and per minute.
// The shared limits are a Redis script (limits.test.ts runs it against a real Redis).
export default mutationConfig({
  dir: 'apps/ingestion',
  mutate: functionRanges('apps/ingestion/src/limits/rate-limits.ts', ['LocalWindows', 'LocalBackstop']),
  tests: ['src/limits/local-windows.test.ts'],
  breakAt: 80,
});
