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
});
