import { normalizeEvent, type TrackingEvent } from '@pipeline/events';
import { createScratchDatabase, DEFAULT_DATABASE_URL, type ScratchDatabase } from '@pipeline/postgres';
import { warehouseConnectionOf as connectionOf } from '../../testing/warehouse-connection';
import { PostgresEngine } from './postgres-engine';
import type { AccountLocation } from '../warehouse-engine';
import { defaultWarehouseTimeouts } from '../warehouse-pool';

// The traffic queries (tracking plans from traffic) on a real PostgreSQL warehouse: the window,
// the caps on names, rows per name and rows in all, and the JSON types as the validator counts
// them, each checked against rows whose answer is known.

const q = { purpose: 'query' } as const;
const base = Date.parse('2026-03-01T00:00:00Z');
const since = new Date(base - 7 * 86_400_000);

function call(fields: Record<string, unknown>, minutesBefore: number, id: string) {
  const timestamp = new Date(base - minutesBefore * 60_000).toISOString();
  return normalizeEvent({ messageId: id, anonymousId: 'a', timestamp, ...fields } as TrackingEvent, {
    receivedAt: new Date(timestamp),
    ip: null,
    userAgent: null,
  });
}

describe('traffic queries (real PostgreSQL)', () => {
  let db: ScratchDatabase;
  let engine: PostgresEngine;
  const account: AccountLocation = { accountId: 'acc-t', schema: 'account_traffic' };

  beforeAll(async () => {
    db = await createScratchDatabase(process.env.DATABASE_URL || DEFAULT_DATABASE_URL, 'traffic queries');
    engine = new PostgresEngine(connectionOf(db.url, 'w1'), {
      timeouts: defaultWarehouseTimeouts,
      poolMax: 2,
      idleTimeoutMs: 10_000,
    });
    await engine.ensureAccount(account);
    await engine.writeRows(account, [
      // A: 4 calls, the newest first by minutes; B: 2; C: 1; a page without a name; one too old.
      call({ type: 'track', event: 'A', properties: { n: 1, s: 'x', f: 1.0 } }, 1, 'a1'),
      call({ type: 'track', event: 'A', properties: { n: 2.5, s: 'y', f: 2 } }, 2, 'a2'),
      call({ type: 'track', event: 'A', properties: { n: null, s: 'z' } }, 3, 'a3'),
      call({ type: 'track', event: 'A', properties: { s: 'w', o: { k: 1 }, l: [1] } }, 4, 'a4'),
      call({ type: 'track', event: 'B', properties: { b: true } }, 5, 'b1'),
      call({ type: 'track', event: 'B', properties: { b: false } }, 6, 'b2'),
      call({ type: 'track', event: 'C', properties: {} }, 7, 'c1'),
      call({ type: 'page', properties: { path: '/' } }, 8, 'p1'),
      call({ type: 'track', event: 'Old', properties: {} }, 8 * 24 * 60, 'old'),
      call({ type: 'identify', userId: 'u1', traits: { email: 'e' } }, 9, 'i1'),
    ]);
  });
  afterAll(async () => {
    await engine.close();
    await db.drop();
  });

  it('names the most frequent calls of the window first, and how many there are', async () => {
    const names = await engine.query(account, 'traffic_names', { table: 'events', since, maxNames: 2 }, q);
    expect(names).toEqual([
      {
        type: 'track',
        name: 'A',
        count: 4,
        firstSeen: new Date(base - 4 * 60_000),
        lastSeen: new Date(base - 60_000),
        distinctNames: 4,
      },
      {
        type: 'track',
        name: 'B',
        count: 2,
        firstSeen: new Date(base - 6 * 60_000),
        lastSeen: new Date(base - 5 * 60_000),
        distinctNames: 4,
      },
    ]);
    const all = await engine.query(account, 'traffic_names', { table: 'events', since, maxNames: 10 }, q);
    // Ties (C and the unnamed page, one call each) in type order; Old is outside the window.
    expect(all.map((n) => [n.type, n.name, n.count])).toEqual([
      ['track', 'A', 4],
      ['track', 'B', 2],
      ['page', null, 1],
      ['track', 'C', 1],
    ]);
    expect(
      (await engine.query(account, 'traffic_names', { table: 'users', since, maxNames: 10 }, q)).map((n) => [
        n.type,
        n.name,
        n.count,
      ]),
    ).toEqual([['identify', null, 1]]);
  });

  it('profiles the latest rows per name, whole numbers as integer, strings up to the limit', async () => {
    const profile = await engine.query(
      account,
      'traffic_profile',
      { table: 'events', since, maxNames: 1, perName: 3, maxValues: 3, maxValueLength: 10, maxRows: 100 },
      q,
    );
    // Only A (maxNames 1), only its 3 newest rows (a4 is left out: no o or l).
    expect(profile).toEqual([
      { type: 'track', name: 'A', property: 'f', jsonType: 'integer', count: 2, strings: null },
      { type: 'track', name: 'A', property: 'n', jsonType: 'integer', count: 1, strings: null },
      { type: 'track', name: 'A', property: 'n', jsonType: 'null', count: 1, strings: null },
      { type: 'track', name: 'A', property: 'n', jsonType: 'number', count: 1, strings: null },
      { type: 'track', name: 'A', property: 's', jsonType: 'string', count: 3, strings: ['x', 'y', 'z'] },
    ]);
    const wider = await engine.query(
      account,
      'traffic_profile',
      { table: 'events', since, maxNames: 1, perName: 4, maxValues: 3, maxValueLength: 10, maxRows: 100 },
      q,
    );
    // Four distinct strings are past the limit of 3: no values; the object and array appear.
    expect(wider.filter((r) => ['s', 'o', 'l'].includes(r.property))).toEqual([
      { type: 'track', name: 'A', property: 'l', jsonType: 'array', count: 1, strings: null },
      { type: 'track', name: 'A', property: 'o', jsonType: 'object', count: 1, strings: null },
      { type: 'track', name: 'A', property: 's', jsonType: 'string', count: 4, strings: null },
    ]);
    const capped = await engine.query(
      account,
      'traffic_profile',
      { table: 'events', since, maxNames: 10, perName: 10, maxValues: 3, maxValueLength: 10, maxRows: 2 },
      q,
    );
    expect(capped).toHaveLength(2);
    // A value longer than maxValueLength (code points) gives no values either.
    const short = await engine.query(
      account,
      'traffic_profile',
      { table: 'events', since, maxNames: 1, perName: 3, maxValues: 3, maxValueLength: 0, maxRows: 100 },
      q,
    );
    expect(short.find((r) => r.property === 's')).toMatchObject({ count: 3, strings: null });
  });

  it('gives whole rows round robin over the names, at most maxRows', async () => {
    const rows = await engine.query(
      account,
      'traffic_rows',
      { table: 'events', since, maxNames: 10, perName: 2, maxRows: 5 },
      q,
    );
    // The newest of each name (by frequency, then type), then the second newest.
    expect(rows.map(({ row }) => row.message_id)).toEqual(['a1', 'b1', 'p1', 'c1', 'a2']);
    expect(rows[0]!.row).toMatchObject({ type: 'track', event: 'A', properties: { n: 1, s: 'x', f: 1 } });
    expect(new Date(String(rows[0]!.row.timestamp)).getTime()).toBe(base - 60_000);
  });

  it('answers nothing for an account without tables, and refuses a table that is not a warehouse table', async () => {
    const empty = { accountId: 'acc-e', schema: 'account_traffic_empty' };
    expect(await engine.query(empty, 'traffic_names', { table: 'events', since, maxNames: 10 }, q)).toEqual(
      [],
    );
    await expect(
      engine.query(account, 'traffic_names', { table: 'pg_user' as 'events', since, maxNames: 10 }, q),
    ).rejects.toThrow('unknown warehouse table pg_user');
  });
});
