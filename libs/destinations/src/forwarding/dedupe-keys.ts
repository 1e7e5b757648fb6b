import { createHash } from 'node:crypto';

// Each vendor deduplicates on its own key format. The keys derive from the event's messageId
// alone (and its time, for ULIDs), so a retry of the same event always carries the same key.

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest();

/** Mixpanel's $insert_id: at most 36 bytes of letters, digits and '-'. */
export function mixpanelInsertId(messageId: string): string {
  return /^[A-Za-z0-9-]{1,36}$/.test(messageId) ? messageId : sha256(messageId).toString('hex').slice(0, 32);
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** The namespace of our name-based UUIDs (RFC 9562 version 5). */
const MESSAGE_ID_NAMESPACE = Buffer.from('6f0e3c1a9d2b4e8f8a7c5b3d1e9f0a2c', 'hex');

/** A UUID for vendors that want one (OneSignal's idempotency_key): the messageId if it is one. */
export function uuidOf(messageId: string): string {
  if (UUID.test(messageId)) return messageId.toLowerCase();
  const hash = createHash('sha1').update(MESSAGE_ID_NAMESPACE).update(messageId, 'utf8').digest();
  hash[6] = ((hash[6] ?? 0) & 0x0f) | 0x50;
  hash[8] = ((hash[8] ?? 0) & 0x3f) | 0x80;
  const hex = hash.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/**
 * A ULID for Customer.io's event `id`: the event time in its first 48 bits (what a ULID
 * means), and 80 bits of the messageId's hash in place of randomness.
 */
export function ulidOf(messageId: string, timeMs: number): string {
  let time = BigInt(Math.min(Math.max(0, Math.trunc(timeMs)), 2 ** 48 - 1));
  let timePart = '';
  for (let i = 0; i < 10; i += 1) {
    timePart = CROCKFORD[Number(time % 32n)] + timePart;
    time /= 32n;
  }
  let bits = BigInt(`0x${sha256(messageId).subarray(0, 10).toString('hex')}`);
  let randomPart = '';
  for (let i = 0; i < 16; i += 1) {
    randomPart = CROCKFORD[Number(bits % 32n)] + randomPart;
    bits /= 32n;
  }
  return timePart + randomPart;
}

/** Segment wants messageId under 100 characters; ours may have exactly 100. */
export function segmentMessageId(messageId: string): string {
  return messageId.length < 100 ? messageId : sha256(messageId).toString('hex');
}
