import { validateEvent, type ReceiptContext, type TrackingEvent } from '@pipeline/events';
import type { OutboundEvent } from '../forwarder';

/**
 * What the server knew: the client's clock ran 5 s ahead, so each event's corrected time is
 * 5 s before its own timestamp (timestamp 11:59:59, sent 12:00:05, received 12:00:00).
 */
export const sampleReceipt: ReceiptContext = {
  receivedAt: new Date('2026-03-01T12:00:00.000Z'),
  ip: '198.51.100.7',
  userAgent: 'Mozilla/5.0 (look-alike)',
  batchSentAt: '2026-03-01T12:00:05.000Z',
};
export const sampleTimestamp = '2026-03-01T11:59:59.000Z';
/** sampleTimestamp corrected by the receipt: received - (sent - timestamp). */
export const correctedSampleTime = new Date('2026-03-01T11:59:54.000Z');

let counter = 0;

/** A valid tracking event (checked with the ingestion's own validator) with its receipt. */
export function sampleEvent(
  fields: Partial<TrackingEvent> & Pick<TrackingEvent, 'type'> & Record<string, unknown>,
): OutboundEvent {
  counter += 1;
  const candidate = {
    messageId: `msg-${String(counter).padStart(6, '0')}`,
    timestamp: sampleTimestamp,
    anonymousId: 'anon-1234',
    ...fields,
  };
  // The widest door: Segment's routes take what /collect does, and screen calls.
  const result = validateEvent(candidate, Infinity, 'segment');
  if (!result.valid) throw new Error(`invalid sample event: ${JSON.stringify(result.errors)}`);
  return { event: result.event, receipt: sampleReceipt };
}

/**
 * An event exactly as given, with the sample receipt (or parts of another): the mapping tests
 * name every id and time they expect, so nothing here numbers or fills in fields.
 */
export function outboundOf(event: TrackingEvent, receipt: Partial<ReceiptContext> = {}): OutboundEvent {
  return { event, receipt: { ...sampleReceipt, ...receipt } };
}

/** An event as given, unchecked: for sizes the ingestion would refuse. */
export function rawSampleEvent(event: Record<string, unknown>): OutboundEvent {
  counter += 1;
  return {
    event: {
      messageId: `raw-${String(counter).padStart(6, '0')}`,
      timestamp: sampleTimestamp,
      anonymousId: 'anon-1234',
      ...event,
    } as unknown as TrackingEvent,
    receipt: sampleReceipt,
  };
}

/** One event of each type, by a known user, with a page context. */
export function oneOfEachType(): Record<TrackingEvent['type'], OutboundEvent> {
  const context = {
    page: {
      url: 'https://shop.example/pricing?x=1',
      path: '/pricing',
      title: 'Pricing',
      referrer: 'https://ref.example/',
    },
    language: 'en-US',
    os: 'macOS',
  };
  return {
    track: sampleEvent({
      type: 'track',
      userId: 'user-42',
      event: 'Plan Upgraded',
      properties: { plan: 'pro', seats: 3 },
      context,
    }),
    page: sampleEvent({
      type: 'page',
      userId: 'user-42',
      name: 'Pricing',
      properties: { variant: 'b' },
      context,
    }),
    identify: sampleEvent({
      type: 'identify',
      userId: 'user-42',
      traits: { email: 'ada@example.com', firstName: 'Ada', plan: 'pro', logins: 7, vip: true },
      context,
    }),
    group: sampleEvent({
      type: 'group',
      userId: 'user-42',
      groupId: 'acme',
      traits: { name: 'Acme', seats: 50 },
      context,
    }),
    alias: sampleEvent({ type: 'alias', userId: 'user-42', previousId: 'anon-1234', context }),
    screen: sampleEvent({
      type: 'screen',
      userId: 'user-42',
      name: 'Checkout',
      properties: { step: 2 },
      context,
    }),
  };
}

/** Events whose serialized size is about `bytes`, for byte-limit tests. */
export function bulkyEvents(
  count: number,
  bytes: number,
  fields: Record<string, unknown> = {},
): OutboundEvent[] {
  return Array.from({ length: count }, () =>
    rawSampleEvent({
      type: 'track',
      userId: 'user-42',
      event: 'Bulk',
      properties: { blob: 'x'.repeat(bytes) },
      ...fields,
    }),
  );
}
