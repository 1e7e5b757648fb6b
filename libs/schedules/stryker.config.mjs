import { mutationConfig } from '../../tools/mutation/base-config.mjs';

// When a scheduled sync or integration run is due: the scheduler's rule (daily wall time across
// daylight-saving changes, every N elapsed hours).
export default mutationConfig({
  dir: 'libs/schedules',
  mutate: ['libs/schedules/src/next-run.ts'],
  tests: ['src/next-run.test.ts'],
  breakAt: 98,
});
