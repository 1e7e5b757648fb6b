import fc from 'fast-check';
import type { ViolationBucket, ViolationKey } from '@pipeline/redis';
import { groupViolations, newestSamples, violationGroupBys } from './plan-violations-grouping';
import { checkViolationsQuery } from './plan-violations.service';
import type { ViolationGroupBy } from './plan-violations.dto';

const key = (overrides: Partial<ViolationKey> = {}): ViolationKey => ({
  planId: 'p1',
  version: 1,
  writeKeyId: 'wk1',
  eventType: 'track',
  eventName: 'Order Completed',
  code: 'missing_required',
  path: '/properties/subtotal',
  ...overrides,
});
const bucket = (start: number, counts: [ViolationKey, number][], overflow = 0): ViolationBucket => ({
  start,
  counts: counts.map(([k, count]) => ({ key: k, count })),
  overflow,
});

describe('groupViolations', () => {
  it('sums a group across its keys and buckets, a point per bucket, zeros included', () => {
    const buckets = [
      bucket(0, [
        [key(), 4],
        [key({ writeKeyId: 'wk2' }), 3],
        [key({ code: 'type_mismatch', path: '/properties/order_id' }), 2],
      ]),
      bucket(60_000, []),
      bucket(120_000, [[key({ version: 2 }), 5]], 7),
    ];
    const grouped = groupViolations(buckets, 'p1', ['event', 'code', 'path'], {}, 200);
    expect(grouped).toEqual({
      groups: [
        {
          values: {
            eventType: 'track',
            eventName: 'Order Completed',
            code: 'missing_required',
            path: '/properties/subtotal',
          },
          keys: [key(), key({ writeKeyId: 'wk2' }), key({ version: 2 })],
          total: 12,
          series: [7, 0, 5],
        },
        {
          values: {
            eventType: 'track',
            eventName: 'Order Completed',
            code: 'type_mismatch',
            path: '/properties/order_id',
          },
          keys: [key({ code: 'type_mismatch', path: '/properties/order_id' })],
          total: 2,
          series: [2, 0, 0],
        },
      ],
      groupsLeftOff: 0,
      total: 14,
      overflow: 7,
    });
  });

  it('counts only the plan’s keys that pass the filters', () => {
    const buckets = [
      bucket(0, [
        [key(), 1],
        [key({ planId: 'p2' }), 10],
        [key({ writeKeyId: 'wk2' }), 20],
        [key({ eventType: 'identify', eventName: null, code: 'type_mismatch' }), 40],
        [key({ version: 2 }), 80],
      ]),
    ];
    const totalOf = (filters: Parameters<typeof groupViolations>[3]) =>
      groupViolations(buckets, 'p1', ['code'], filters, 200).total;
    expect(totalOf({})).toBe(141);
    expect(totalOf({ writeKeyId: 'wk2' })).toBe(20);
    expect(totalOf({ event: 'identify' })).toBe(40);
    expect(totalOf({ event: 'Order Completed' })).toBe(101);
    expect(totalOf({ code: 'type_mismatch' })).toBe(40);
    expect(totalOf({ version: 2 })).toBe(80);
  });

  const arbitraryKey = fc.record({
    planId: fc.constantFrom('p1', 'p2'),
    version: fc.constantFrom(1, 2, null),
    writeKeyId: fc.constantFrom('wk1', 'wk2'),
    eventType: fc.constantFrom('track', 'identify'),
    eventName: fc.constantFrom('A', 'B', null),
    code: fc.constantFrom('missing_required', 'type_mismatch', 'enum_mismatch'),
    path: fc.constantFrom('', '/properties/a', '/properties/b'),
  });
  const arbitraryBuckets = fc
    .array(fc.array(fc.tuple(arbitraryKey, fc.integer({ min: 1, max: 1000 })), { maxLength: 12 }), {
      minLength: 1,
      maxLength: 6,
    })
    .map((lists) => lists.map((counts, i) => bucket(i * 60_000, counts)));
  const arbitraryGroupBy = fc.subarray<ViolationGroupBy>(['event', 'code', 'path', 'version', 'writeKey'], {
    minLength: 1,
  });

  it('loses and invents no count, sorts by total and caps the groups', () => {
    fc.assert(
      fc.property(
        arbitraryBuckets,
        arbitraryGroupBy,
        fc.integer({ min: 1, max: 5 }),
        (buckets, groupBy, max) => {
          const all = groupViolations(buckets, 'p1', groupBy, {}, 10_000);
          let expected = 0;
          for (const b of buckets) for (const c of b.counts) if (c.key.planId === 'p1') expected += c.count;
          expect(all.total).toBe(expected);
          expect(all.groups.reduce((sum, g) => sum + g.total, 0)).toBe(expected);
          for (const g of all.groups) {
            expect(g.series).toHaveLength(buckets.length);
            expect(g.series.reduce((a, b) => a + b, 0)).toBe(g.total);
          }
          for (let i = 1; i < all.groups.length; i++)
            expect(all.groups[i - 1]!.total).toBeGreaterThanOrEqual(all.groups[i]!.total);
          const capped = groupViolations(buckets, 'p1', groupBy, {}, max);
          expect(capped.groups).toEqual(all.groups.slice(0, max));
          expect(capped.groupsLeftOff).toBe(Math.max(0, all.groups.length - max));
        },
      ),
    );
  });
});

describe('groupViolations, one member at a time', () => {
  const buckets = [
    bucket(0, [
      [key(), 1],
      [key({ version: 2, writeKeyId: 'wk2', path: '/properties/total' }), 2],
    ]),
    bucket(60_000, [[key(), 4]]),
  ];

  it.each([
    ['path', [{ path: '/properties/subtotal' }, { path: '/properties/total' }], [5, 2]],
    ['version', [{ version: 1 }, { version: 2 }], [5, 2]],
    ['writeKey', [{ writeKeyId: 'wk1' }, { writeKeyId: 'wk2' }], [5, 2]],
    ['code', [{ code: 'missing_required' }], [7]],
  ] as const)('groups by %s alone: its member and no other', (by, values, totals) => {
    const grouped = groupViolations(buckets, 'p1', [by], {}, 200);
    expect(grouped.groups.map((g) => g.values)).toEqual(values);
    expect(grouped.groups.map((g) => g.total)).toEqual(totals);
  });

  it('lists a key counted in several buckets once among the group’s keys', () => {
    const [group] = groupViolations(buckets, 'p1', ['code'], {}, 200).groups;
    expect(group?.keys).toEqual([key(), key({ version: 2, writeKeyId: 'wk2', path: '/properties/total' })]);
    expect(group?.series).toEqual([3, 4]);
  });

  it('orders groups of equal totals by their values, whatever the order counted', () => {
    const paths = ['/c', '/a', '/d', '/b'];
    const grouped = groupViolations(
      [
        bucket(
          0,
          paths.map((path) => [key({ path }), 2] as [ViolationKey, number]),
        ),
      ],
      'p1',
      ['path'],
      {},
      200,
    );
    expect(grouped.groups.map((g) => g.values.path)).toEqual(['/a', '/b', '/c', '/d']);
    const reversed = groupViolations(
      [
        bucket(
          0,
          [...paths].reverse().map((path) => [key({ path }), 2] as [ViolationKey, number]),
        ),
      ],
      'p1',
      ['path'],
      {},
      200,
    );
    expect(reversed.groups.map((g) => g.values.path)).toEqual(['/a', '/b', '/c', '/d']);
  });

  it('names every member a query may group by', () => {
    expect(violationGroupBys).toEqual(['event', 'code', 'path', 'version', 'writeKey']);
  });
});

describe('newestSamples, ties', () => {
  it('keeps the lists’ order among samples of the same time', () => {
    const at = '2026-11-29T10:00:00.000Z';
    const samples = ['s1', 's2', 's3', 's4'].map((id) => ({ id, receivedAt: at }));
    expect(newestSamples([samples.slice(0, 2), samples.slice(2)], 4).map((s) => s.id)).toEqual([
      's1',
      's2',
      's3',
      's4',
    ]);
  });
});

describe('newestSamples', () => {
  it('merges lists newest first, capped', () => {
    const at = (minute: number) => ({
      receivedAt: new Date(Date.UTC(2026, 10, 29, 10, minute)).toISOString(),
    });
    expect(newestSamples([[at(9), at(5), at(1)], [at(8), at(2)], []], 3)).toEqual([at(9), at(8), at(5)]);
    expect(newestSamples([[at(9)], [{ receivedAt: 'not a time' }]], 5)).toEqual([
      at(9),
      { receivedAt: 'not a time' },
    ]);
    expect(newestSamples([[at(9)]], 0)).toEqual([]);
  });

  it('answers the newest of all, in order, never more than the limit', () => {
    const time = fc
      .integer({ min: 0, max: 10_000_000 })
      .map((ms) => ({ receivedAt: new Date(ms).toISOString() }));
    fc.assert(
      fc.property(
        fc.array(fc.array(time, { maxLength: 5 }), { maxLength: 6 }),
        fc.integer({ min: 0, max: 5 }),
        (lists, limit) => {
          const merged = newestSamples(lists, limit);
          const all = lists
            .flat()
            .map((s) => s.receivedAt)
            .sort()
            .reverse();
          expect(merged.map((s) => s.receivedAt)).toEqual(all.slice(0, limit));
        },
      ),
    );
  });
});

describe('checkViolationsQuery', () => {
  const now = Date.UTC(2026, 10, 29, 12, 30);
  it('defaults to the last 24 hours by minute, event,code,path and 3 samples', () => {
    expect(checkViolationsQuery({}, now)).toEqual({
      since: now - 86_400_000,
      until: now,
      granularity: 'minute',
      groupBy: ['event', 'code', 'path'],
      samples: 3,
      filters: {},
    });
    expect(checkViolationsQuery({ since: '2026-11-20T00:00:00Z' }, now).granularity).toBe('hour');
  });

  it.each([
    [{ since: 'yesterday' }, 'query.since'],
    [{ until: '2026-11-29' }, 'query.until'],
    [{ since: '2026-11-29T12:00:00Z', until: '2026-11-29T11:00:00Z' }, 'query.since'],
    [{ granularity: 'second' }, 'query.granularity'],
    [{ since: '2026-11-27T00:00:00Z', granularity: 'minute' }, 'query.granularity'],
    [{ since: '2026-10-01T00:00:00Z', granularity: 'hour' }, 'query.granularity'],
    [{ groupBy: 'event,country' }, 'query.groupBy'],
    [{ groupBy: '' }, 'query.groupBy'],
    [{ samples: 6 }, 'query.samples'],
    [{ samples: -1 }, 'query.samples'],
    [{ version: 0 }, 'query.version'],
  ])('refuses %j naming %s', (query, path) => {
    expect(() => checkViolationsQuery(query, now)).toThrow(
      expect.objectContaining({
        status: 400,
        code: 'validation_failed',
        details: { errors: [expect.objectContaining({ path })] },
      }),
    );
  });
});
