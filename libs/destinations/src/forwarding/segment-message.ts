import type { OutboundEvent } from './outbound-event';
import { segmentMessageId } from './dedupe-keys';
import { defined, eventTime, userAgentOf, userIdOf } from './event-fields';

/** A message of the Segment spec, as the Segment HTTP API and our webhooks send it. */
export type SegmentMessage = Record<string, unknown> & { type: string; messageId: string };

/**
 * Our event in Segment's spec, which it nearly is already: the timestamp is corrected, the
 * original kept as originalTimestamp, and the server's view (IP, user agent, receipt time)
 * goes into context. The write key and the client's sentAt stay with us.
 */
export function segmentMessageOf(outbound: OutboundEvent): SegmentMessage {
  const { event, receipt } = outbound;
  const {
    writeKey: _writeKey,
    sentAt: _sentAt,
    sessionId,
    context,
    timestamp,
    userId: _userId,
    messageId,
    ...rest
  } = event;
  const ip = receipt.ip ?? undefined;
  const userAgent = userAgentOf(outbound);
  return defined({
    ...rest,
    messageId: segmentMessageId(messageId),
    userId: userIdOf(event),
    timestamp: eventTime(outbound).toISOString(),
    originalTimestamp: timestamp,
    receivedAt: receipt.receivedAt.toISOString(),
    context: defined({
      ...context,
      ip,
      userAgent,
      session: sessionId ? { ...context?.session, id: sessionId } : context?.session,
    }),
  });
}
