import {
  basic,
  bytes,
  defineLookAlike,
  isIsoTime,
  isJson,
  isObject,
  type LookAlikeHandler,
  nonEmpty,
  parseJson,
} from '../../testing/look-alike';

// Segment HTTP Tracking API (POST /v1/batch).

const SEGMENT_MAX_BATCH_BYTES = 500 * 1024;
const SEGMENT_MAX_MESSAGE_BYTES = 32 * 1024;
const segmentTypes = new Set(['identify', 'track', 'page', 'screen', 'group', 'alias']);

/** What makes Segment drop a message while still answering 200 (seen only in its Debugger). */
function segmentMessageProblem(message: Record<string, unknown>): string | undefined {
  if (!segmentTypes.has(String(message.type))) return 'unknown type';
  if (!nonEmpty(message.userId) && !nonEmpty(message.anonymousId)) return 'userId or anonymousId is required';
  if (message.type === 'track' && !nonEmpty(message.event)) return 'event is required';
  if (message.type === 'group' && !nonEmpty(message.groupId)) return 'groupId is required';
  if (message.type === 'alias' && (!nonEmpty(message.previousId) || !nonEmpty(message.userId))) {
    return 'previousId and userId are required';
  }
  if (!nonEmpty(message.messageId) || message.messageId.length >= 100)
    return 'messageId must be under 100 chars';
  if (message.timestamp !== undefined && !isIsoTime(message.timestamp)) return 'timestamp must be ISO 8601';
  return undefined;
}

const segment: LookAlikeHandler = (incoming, state) => {
  // Segment's documented answer to every request it can read is 200; an unknown write key is
  // refused here (401) so that a client sending the wrong one fails a test instead of passing.
  if (incoming.method !== 'POST' || incoming.path !== '/v1/batch') {
    return { status: 404, body: { success: false, message: 'not found' } };
  }
  if (incoming.headers.authorization !== basic(state.expected.writeKey ?? '', '')) {
    return { status: 401, body: { success: false, message: 'invalid write key' } };
  }
  if (Buffer.byteLength(incoming.body) > SEGMENT_MAX_BATCH_BYTES) {
    return { status: 400, body: { success: false, message: 'batch exceeds 500KB' } };
  }
  const body = parseJson(incoming.body);
  if (!isJson(incoming) || !isObject(body) || !Array.isArray(body.batch)) {
    return { status: 400, body: { success: false, message: 'invalid JSON' } };
  }
  if (body.batch.some((message: unknown) => bytes(message) > SEGMENT_MAX_MESSAGE_BYTES)) {
    return { status: 400, body: { success: false, message: 'message exceeds 32KB' } };
  }
  (body.batch as unknown[]).forEach((message, index) => {
    const record = isObject(message) ? message : {};
    // Beyond 2500 messages Segment answers 200 and drops the rest.
    const problem = index >= 2500 ? 'batch over 2500 messages' : segmentMessageProblem(record);
    const rejection = problem ?? state.rejection(record, 'batch');
    if (rejection) state.drop('batch', record);
    else state.accept('batch', record);
  });
  return { status: 200, body: { success: true } };
};

export const segmentLookAlike = defineLookAlike({
  vendor: 'segment',
  kind: 'customer_data',
  credentials: { writeKey: 'seg-write-key' },
  handle: segment,
  scriptedBody: (status) => ({ success: false, message: status === 400 ? 'invalid JSON' : 'error' }),
  // 2500 messages per batch is out of reach (500 KB comes first for messages of 225 bytes or more),
  // so segment-forwarder.test.ts tests its splitting by bytes.
  contract: { authStatus: 401 },
});
