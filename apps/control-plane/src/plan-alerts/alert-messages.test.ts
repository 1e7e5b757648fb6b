import type { ViolationBucket, ViolationKey } from '@pipeline/redis';
import { alertMessageId, MAX_ALERTS_PER_WINDOW, violationGenerated, windowAlerts } from './alert-messages';
import { resumeAfterExpiry, windowDue, windowStartOf } from './alert-windows';

// The pure part of the alerts: windows, sums per key, the cap, message ids.

const key = (overrides: Partial<ViolationKey> = {}): ViolationKey => ({
  planId: 'p1',
  version: 1,
  writeKeyId: 'wk-1',
  eventType: 'track',
  eventName: 'Order Completed',
  code: 'missing_required',
  path: '/properties/order_id',
  ...overrides,
});
const bucket = (start: number, counts: [ViolationKey, number][]): ViolationBucket => ({
  start,
  counts: counts.map(([k, count]) => ({ key: k, count })),
  overflow: 0,
});

describe('alert windows', () => {
  it('aligns windows to UTC multiples and waits out the grace', () => {
    const at = Date.UTC(2026, 10, 30, 10, 7, 42);
    expect(new Date(windowStartOf(at, 5)).toISOString()).toBe('2026-11-30T10:05:00.000Z');
    expect(new Date(windowStartOf(at, 180)).toISOString()).toBe('2026-11-30T09:00:00.000Z');
    expect(new Date(windowStartOf(at, 1440)).toISOString()).toBe('2026-11-30T00:00:00.000Z');
    const end = Date.UTC(2026, 10, 30, 10, 10);
    expect(windowDue(end, end + 29_999, 30_000)).toBe(false);
    expect(windowDue(end, end + 30_000, 30_000)).toBe(true);
  });

  it('resumes at the first whole window still counted', () => {
    const now = Date.UTC(2026, 10, 30, 10, 7, 0);
    const kept = 2 * 86_400_000;
    const recent = Date.UTC(2026, 10, 29, 10, 0);
    expect(resumeAfterExpiry(recent, 60, now, kept)).toBe(recent);
    expect(new Date(resumeAfterExpiry(Date.UTC(2026, 10, 20), 60, now, kept)).toISOString()).toBe(
      '2026-11-28T11:00:00.000Z',
    );
  });
});

describe('window alerts', () => {
  it('sums a key across versions, write keys and minutes, and leaves other plans out', () => {
    const found = windowAlerts(
      [
        bucket(0, [
          [key(), 400],
          [key({ planId: 'p2' }), 50],
        ]),
        bucket(60_000, [
          [key({ version: 2 }), 300],
          [key({ version: 2, writeKeyId: 'wk-2' }), 350],
          [key({ code: 'type_mismatch', path: '/properties/subtotal' }), 9],
        ]),
      ],
      'p1',
    );
    expect(found.alerts.map((a) => [a.code, a.count, a.versions, a.writeKeyIds])).toEqual([
      ['missing_required', 1050, [1, 2], ['wk-1', 'wk-2']],
      ['type_mismatch', 9, [1], ['wk-1']],
    ]);
    // The sample comes from the (version, write key) counted most: version 1, wk-1 (400).
    expect(found.alerts[0]!.sampleKey).toEqual(key());
    expect([found.omittedKeys, found.omittedCount]).toEqual([0, 0]);
  });

  it('keeps the largest keys up to the cap and counts the rest', () => {
    const counts: [ViolationKey, number][] = Array.from({ length: MAX_ALERTS_PER_WINDOW + 3 }, (_, i) => [
      key({ path: `/properties/p${i}` }),
      i + 1,
    ]);
    const found = windowAlerts([bucket(0, counts)], 'p1');
    expect(found.alerts).toHaveLength(MAX_ALERTS_PER_WINDOW);
    expect(found.alerts[0]!.count).toBe(MAX_ALERTS_PER_WINDOW + 3);
    expect([found.omittedKeys, found.omittedCount]).toEqual([3, 1 + 2 + 3]);
  });

  it('gives a key the same message id in every attempt, another per window and key', () => {
    const window = { planId: 'p1', planName: null, start: 0, end: 300_000 };
    const [alert] = windowAlerts([bucket(0, [[key(), 2]])], 'p1').alerts;
    expect(alertMessageId(window, alert!)).toBe(alertMessageId({ ...window }, { ...alert! }));
    expect(alertMessageId(window, alert!)).not.toBe(
      alertMessageId({ ...window, start: 300_000, end: 600_000 }, alert!),
    );
    expect(alertMessageId(window, alert!)).not.toBe(alertMessageId(window, { ...alert!, path: '/x' }));
    const event = violationGenerated(
      window,
      { alerts: [alert!], omittedKeys: 0, omittedCount: 0 },
      alert!,
      undefined,
    );
    expect(event.properties).not.toHaveProperty('planName');
    expect(event.properties).not.toHaveProperty('sample');
    expect(event.timestamp).toBe('1970-01-01T00:05:00.000Z');
  });

  it('orders versions with null first, ties of count by type, name, code and path', () => {
    const found = windowAlerts(
      [
        bucket(0, [
          [key({ version: 3 }), 1],
          [key({ version: null, writeKeyId: 'wk-3' }), 1],
          [key({ version: 2, writeKeyId: 'wk-2' }), 1],
          [key({ eventName: null, eventType: 'page', path: '/b' }), 3],
          [key({ eventName: 'Zed', path: '/a' }), 3],
          [key({ eventName: 'Abc', path: '/c' }), 3],
          [key({ eventName: 'Abc', path: '/a' }), 3],
          [key({ eventName: 'Abc', code: 'a_code', path: '/z' }), 3],
          [key({ eventName: null, path: '/n' }), 3],
        ]),
      ],
      'p1',
    );
    expect(found.alerts.map((a) => [a.eventType, a.eventName, a.code, a.path, a.count])).toEqual([
      ['page', null, 'missing_required', '/b', 3],
      ['track', null, 'missing_required', '/n', 3],
      ['track', 'Abc', 'a_code', '/z', 3],
      ['track', 'Abc', 'missing_required', '/a', 3],
      ['track', 'Abc', 'missing_required', '/c', 3],
      ['track', 'Order Completed', 'missing_required', '/properties/order_id', 3],
      ['track', 'Zed', 'missing_required', '/a', 3],
    ]);
    const last = found.alerts.find((a) => a.eventName === 'Order Completed')!;
    expect(last.versions).toEqual([null, 2, 3]);
    expect(last.writeKeyIds).toEqual(['wk-1', 'wk-2', 'wk-3']);
  });

  it('sorts versions and write keys by value, not as text or as given', () => {
    const found = windowAlerts(
      [
        bucket(0, [
          [key({ version: 10, writeKeyId: 'wk-b' }), 1],
          [key({ version: 9, writeKeyId: 'wk-a' }), 1],
          [key({ version: 1, writeKeyId: 'wk-c' }), 1],
        ]),
      ],
      'p1',
    );
    expect(found.alerts[0]!.versions).toEqual([1, 9, 10]);
    expect(found.alerts[0]!.writeKeyIds).toEqual(['wk-a', 'wk-b', 'wk-c']);
  });

  it('samples the (version, write key) counted most over the whole window, not the first or the last', () => {
    const a = key({ writeKeyId: 'wk-a' });
    const b = key({ writeKeyId: 'wk-b' });
    const c = key({ writeKeyId: 'wk-c' });
    // a: 5 + 5 = 10 across minutes; b: 8 in one; c: 10 later (ties keep the first to get there).
    const found = windowAlerts(
      [
        bucket(0, [
          [a, 5],
          [b, 8],
        ]),
        bucket(60_000, [
          [a, 5],
          [c, 10],
        ]),
      ],
      'p1',
    );
    expect(found.alerts[0]!.sampleKey).toEqual(a);
    expect(found.alerts[0]!.count).toBe(28);
    const later = windowAlerts([bucket(0, [[b, 3]]), bucket(60_000, [[c, 4]])], 'p1');
    expect(later.alerts[0]!.sampleKey).toEqual(c);
  });

  it('makes the Segment-shaped event with the plan name and the sample when there are some', () => {
    const window = { planId: 'p1', planName: 'Checkout', start: 0, end: 300_000 };
    const found = windowAlerts([bucket(0, [[key({ version: null }), 7]])], 'p1');
    const event = violationGenerated(
      window,
      { ...found, omittedKeys: 2, omittedCount: 5 },
      found.alerts[0]!,
      {
        messageId: 'm-1',
        receivedAt: '1970-01-01T00:01:00.000Z',
        message: '/properties/order_id is required',
        payload: { secret: 'not sent' },
      },
    );
    expect(event).toEqual({
      type: 'track',
      event: 'Violation Generated',
      messageId: alertMessageId(window, found.alerts[0]!),
      timestamp: '1970-01-01T00:05:00.000Z',
      properties: {
        planId: 'p1',
        planName: 'Checkout',
        eventType: 'track',
        eventName: 'Order Completed',
        violationCode: 'missing_required',
        path: '/properties/order_id',
        count: 7,
        windowStart: '1970-01-01T00:00:00.000Z',
        windowEnd: '1970-01-01T00:05:00.000Z',
        versions: [null],
        writeKeyIds: ['wk-1'],
        omittedKeys: 2,
        omittedCount: 5,
        sample: {
          messageId: 'm-1',
          receivedAt: '1970-01-01T00:01:00.000Z',
          message: '/properties/order_id is required',
        },
      },
    });
    expect(alertMessageId(window, found.alerts[0]!)).toMatch(/^[0-9a-f]{32}$/);
  });

  it('resumes where it left off when that window is exactly the oldest counted', () => {
    const now = Date.UTC(2026, 10, 30, 10, 0, 0);
    const kept = 2 * 86_400_000;
    expect(resumeAfterExpiry(now - kept, 60, now, kept)).toBe(now - kept);
  });
});
