import { functionRanges, mutationConfig } from '../../tools/mutation/base-config.mjs';

// The pure logic of ingestion whose mistake loses events, mixes tenants or lets a request in:
// - the write-key limits' arithmetic (windows, counter keys, Retry-After); the counting itself
//   is a Redis script that limits.test.ts runs against a real Redis;
// - the batch's dedupe id (it holds the account), its store key, the receipt every envelope
//   carries and the outbox records built from it;
// - what a /collect or Segment request may be and where its write key comes from, and what a
//   Segment request may cost before and after its key is checked;
// - the write-key checks: which keys are looked up, what is cached and for how long;
// - where the Segment settings document sends a page's events;
// - what the public /health shows of the delivery report (never the groups or their lag).
export default mutationConfig({
  dir: 'apps/ingestion',
  mutate: [
    'apps/ingestion/src/limits/limit-windows.ts',
    // Which commands share a script call, the layout the script reads them in, and when a queue
    // leaves (a mark that never leaves is a retry published twice; a take that never leaves, a
    // request that never answers). Not the class's timers: on one server every key is in one
    // group, and most of their mutants only add or drop a wake-up that finds nothing to send.
    ...functionRanges('apps/ingestion/src/limits/shared-store-batch.ts', [
      'hashTagOf',
      'batchArguments',
      'isEmpty',
      'readyToSend',
      'nextFlush',
      'callsOf',
    ]),
    'apps/ingestion/src/outbox/batch-dedupe-key.ts',
    'apps/ingestion/src/outbox/outbox-messages.ts',
    'apps/ingestion/src/collect/batch-receipt.ts',
    'apps/ingestion/src/collect/collect-request.ts',
    ...functionRanges('apps/ingestion/src/collect/collect-endpoint.ts', ['requestFacts', 'isCollectRequest']),
    // The documented errors and how they are answered: the status and Retry-After that SDKs act on.
    'apps/ingestion/src/collect/ingestion-errors.ts',
    ...functionRanges('apps/ingestion/src/http/error-handler.ts', [
      'writeJson',
      'ingestionErrorBody',
      'writeError',
    ]),
    'apps/ingestion/src/auth/hosted-authenticator.ts',
    'apps/ingestion/src/auth/static-authenticator.ts',
    // Its functions, not its route table and limits: those are module-level constants, and a
    // mutant there reruns every test file.
    ...functionRanges('apps/ingestion/src/segment/segment-request.ts', [
      'segmentRouteOf',
      'isObject',
      'derivedMessageId',
      'completeSegmentMessage',
      'sharedBytes',
      'parseSegmentBody',
    ]),
    ...functionRanges('apps/ingestion/src/segment/segment-settings.ts', [
      'segmentSettingsDocument',
      'arrivalOrigin',
    ]),
    ...functionRanges('apps/ingestion/src/health/delivery-health.ts', ['publicHealth']),
  ],
  tests: [
    'src/limits/local-windows.test.ts',
    'src/limits/limit-windows.test.ts',
    'src/limits/shared-store-batch.test.ts',
    'src/outbox/batch-dedupe-key.test.ts',
    'src/outbox/outbox-messages.test.ts',
    'src/collect/batch-receipt.test.ts',
    'src/collect/collect-request.test.ts',
    'src/collect/collect-endpoint.test.ts',
    'src/collect/ingestion-errors.test.ts',
    'src/http/error-handler.test.ts',
    'src/auth/write-key-authenticators.test.ts',
    'src/segment/segment-request.test.ts',
    'src/segment/segment-settings-document.test.ts',
    'src/health/delivery-health.test.ts',
  ],
  breakAt: 97,
});
