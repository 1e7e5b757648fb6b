import { functionRanges, mutationConfig } from '../../tools/mutation/base-config.mjs';

// The rate-limit arithmetic that runs in this process: fixed windows per second and per minute.
// The shared limits are a Redis script (limits.test.ts runs it against a real Redis).
// And what a Segment request may cost before and after its key is checked: the message cap, the
// merged-size bound, and the completion of each message.
export default mutationConfig({
  dir: 'apps/ingestion',
  mutate: [
    ...functionRanges('apps/ingestion/src/limits/rate-limits.ts', ['LocalWindows', 'LocalBackstop']),
    ...functionRanges('apps/ingestion/src/segment/segment-request.ts', [
      'parseSegmentBody',
      'completeSegmentMessage',
      'sharedBytes',
    ]),
  ],
  tests: ['src/limits/local-windows.test.ts', 'src/segment/segment-request.test.ts'],
  breakAt: 80,
});
