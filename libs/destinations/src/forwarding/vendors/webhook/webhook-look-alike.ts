import {
  defineLookAlike,
  isIsoTime,
  isJson,
  isObject,
  type LookAlikeHandler,
  nonEmpty,
  parseJson,
} from '../../testing/look-alike';
import { verifyWebhookSignature, webhookHeaders } from './webhook-signature';

// A tenant's webhook receiver: signed batches of our own messages.

const webhook: LookAlikeHandler = (incoming, state) => {
  if (incoming.method !== 'POST') return { status: 405, body: { error: 'POST only' } };
  const valid = verifyWebhookSignature({
    secret: state.expected.signingSecret ?? '',
    body: incoming.body,
    timestamp: incoming.headers[webhookHeaders.timestamp.toLowerCase()] as string | undefined,
    signature: incoming.headers[webhookHeaders.signature.toLowerCase()] as string | undefined,
  });
  if (!valid) return { status: 401, body: { error: 'invalid signature' } };
  const body = parseJson(incoming.body);
  // A person's deletion: Segment's `delete` message, one id each.
  if (isJson(incoming) && isObject(body) && body.type === 'delete') {
    const ids = ['userId', 'anonymousId'].filter((field) => nonEmpty(body[field]));
    if (ids.length !== 1 || !nonEmpty(body.messageId) || !isIsoTime(body.timestamp)) {
      return {
        status: 400,
        body: { error: 'a delete names one userId or anonymousId, a messageId and a timestamp' },
      };
    }
    state.accept('delete', body);
    return { status: 200, body: { ok: true } };
  }
  if (!isJson(incoming) || !isObject(body) || !Array.isArray(body.batch)) {
    return { status: 400, body: { error: 'expected {"batch": [...]}' } };
  }
  for (const message of body.batch as unknown[]) if (isObject(message)) state.accept('batch', message);
  return { status: 200, body: { ok: true } };
};

export const webhookLookAlike = defineLookAlike({
  vendor: 'webhook',
  kind: 'webhook',
  credentials: { signingSecret: 'whsec-test-secret' },
  urlPath: '/hooks/events',
  appConfig: (url) => ({ url }),
  handle: webhook,
  scriptedBody: (status) => ({ error: `scripted ${status}` }),
  contract: { perRequest: 100, authStatus: 401 },
});
