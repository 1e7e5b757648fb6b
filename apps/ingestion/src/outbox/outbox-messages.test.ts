import { MAX_ENVELOPE_BYTES, validateEvent, type OutboxEnvelope, type TrackingEvent } from '@pipeline/events';
import { outboxMessages } from './outbox-messages';

const receipt: Omit<OutboxEnvelope, 'events'> = {
  v: 2,
  accountId: 'acc-a',
  writeKeyId: 'wk-a',
  batchId: '0123456789abcdef0123456789abcdef',
  receivedAt: '2026-03-01T12:30:00.000Z',
  ip: null,
  userAgent: null,
};

function event(messageId: string, anonymousId: string, extra: Record<string, unknown> = {}): TrackingEvent {
  const result = validateEvent({
    type: 'track',
    event: 'Clicked',
    messageId,
    anonymousId,
    timestamp: '2026-03-01T12:29:00.000Z',
    ...extra,
  });
  if (!result.valid) throw new Error(JSON.stringify(result.errors));
  return result.event;
}

describe('outboxMessages', () => {
  it('is one record of a small batch, keyed by account and first visitor, its account and batch in the headers', () => {
    const events = [event('m1', 'visitor-1'), event('m2', 'visitor-2')];
    const messages = outboxMessages(receipt, events, 400);
    expect(messages).toEqual([
      {
        key: 'acc-a:visitor-1',
        value: JSON.stringify({ ...receipt, events }),
        headers: {
          'account-id': 'acc-a',
          'batch-id': '0123456789abcdef0123456789abcdef',
          'event-count': '2',
        },
      },
    ]);
  });

  it('splits a large batch, each record with its own count and the same account and batch', () => {
    const padding = 'x'.repeat(20_000);
    const events = Array.from({ length: 30 }, (_, i) =>
      event(`m${i}`, `visitor-${i}`, { properties: { padding } }),
    );
    const messages = outboxMessages(receipt, events, MAX_ENVELOPE_BYTES);
    expect(messages.length).toBe(2);
    const counts = messages.map((m) => Number(m.headers?.['event-count']));
    expect(counts[0]! + counts[1]!).toBe(30);
    messages.forEach((message, index) => {
      const envelope = JSON.parse(String(message.value)) as OutboxEnvelope;
      expect(message.headers).toEqual({
        'account-id': 'acc-a',
        'batch-id': '0123456789abcdef0123456789abcdef',
        'event-count': String(envelope.events.length),
      });
      expect(message.key).toBe(`acc-a:${envelope.events[0]!.anonymousId}`);
      expect(envelope.events.length).toBe(counts[index]);
    });
    expect(messages[1]!.key).not.toBe(messages[0]!.key);
  });

  it('is no record for no events', () => {
    expect(outboxMessages(receipt, [], 0)).toEqual([]);
  });
});
