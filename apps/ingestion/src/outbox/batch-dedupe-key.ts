import { hash } from 'node:crypto';
import { writeKeyHashTag } from '../limits/limit-windows';

/** How long a committed batch is remembered: a retry within it is acknowledged, not published. */
export const DEDUPE_WINDOW_SECONDS = 24 * 3600;

/**
 * A batch's id: the same account sending the same messages again (a retry) gets the same id,
 * so the dedupe store acknowledges it without a second publish. The account is part of it:
 * another account's batch of the same message ids is never taken for a retry (and dropped).
 * The ids are hashed as a JSON array, not joined by a separator: a message id may hold any
 * character, and ["a\nb"] joined by newlines would be ["a", "b"], a different batch answered
 * as a retry of the first and never published.
 */
export function batchDedupeId(accountId: string, messageIds: readonly string[]): string {
  return hash('sha256', JSON.stringify([accountId, ...messageIds]), 'hex').slice(0, 32);
}

/**
 * The batch's key in the shared store: SharedRateLimiter.take looks it up with the rate limits,
 * in one script, so it carries the write key's hash tag (the limits' keys' slot in a cluster).
 */
export function batchDedupeKey(writeKeyId: string, batchId: string): string {
  return `dedupe:batch:${writeKeyHashTag(writeKeyId)}:${batchId}`;
}
