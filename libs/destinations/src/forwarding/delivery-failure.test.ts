import { DeliveryFailure } from './delivery-failure';
import type { OutboundEvent } from './outbound-event';

describe('DeliveryFailure', () => {
  it('is an Error named DeliveryFailure with nothing sent, no requests, nothing undelivered by default', () => {
    const failure = new DeliveryFailure('amplitude: http_503', true);
    expect(failure).toBeInstanceOf(Error);
    expect([failure.name, failure.message, failure.reason, failure.retryable]).toEqual([
      'DeliveryFailure',
      'amplitude: http_503',
      'amplitude: http_503',
      true,
    ]);
    expect([failure.status, failure.detail, failure.retryAfterMs]).toEqual([undefined, undefined, undefined]);
    expect([failure.sent, failure.requests, failure.undelivered, failure.skipped]).toEqual([0, 0, [], []]);
  });

  it('keeps every detail it is given', () => {
    const event = { event: { messageId: 'm1' } } as unknown as OutboundEvent;
    const failure = new DeliveryFailure('braze: http_429', true, {
      status: 429,
      detail: 'slow down',
      retryAfterMs: 30_000,
      sent: 2,
      requests: 3,
      undelivered: [{ event, reason: 'http_429', retryable: true }],
      skipped: [{ messageId: 'm2', reason: 'alias_not_supported' }],
    });
    expect([failure.status, failure.detail, failure.retryAfterMs, failure.sent, failure.requests]).toEqual([
      429,
      'slow down',
      30_000,
      2,
      3,
    ]);
    expect(failure.undelivered).toEqual([{ event, reason: 'http_429', retryable: true }]);
    expect(failure.skipped).toEqual([{ messageId: 'm2', reason: 'alias_not_supported' }]);
  });
});
