import { createClient, type ClickHouseClient } from '@clickhouse/client';
import fc from 'fast-check';
import { startClickHouseTestServer, type ClickHouseTestServer } from '@pipeline/clickhouse/testing';
import {
  parseJsonText,
  normalizeEvent,
  validateEvent,
  type WarehouseRow,
  type WarehouseTable,
} from '@pipeline/events';
import { useTestClusters, type TestCluster } from '@pipeline/postgres/testing';
import {
  clickhouseConnectionOf,
  clickhouseTableRows,
  postgresTableRows,
} from '../../testing/warehouse-table-rows';
import { waitFor } from '../../testing/topic-records';
import { warehouseConnectionOf } from '../../testing/warehouse-connection';
import { PostgresEngine } from '../postgres/postgres-engine';
import type {
  AccountLocation,
  ChangedRow,
  ChangeRequest,
  WarehouseEngine,
  WriteOrigin,
} from '../warehouse-engine';
import { defaultWarehouseTimeouts } from '../warehouse-pool';
import { ClickHouseEngine } from './clickhouse-engine';
import { directClickHouseClient, type ClickHouseClientFactory } from './clickhouse-server';

// One suite, both engines: what the PostgreSQL engine answers is the contract, and the ClickHouse
// engine, against a real ClickHouse (chdb's engine behind its HTTP interface), must answer the
// same for the same rows: rows read back, users and groups folded newest-wins under any order and
// split, changes paged by watermark, the named queries. ClickHouse's inserts are not
// transactions, so a redelivered batch is proven to add no stored copy, counted without FINAL.

type EngineName = 'postgres' | 'clickhouse';
const engineNames: EngineName[] = ['postgres', 'clickhouse'];
const options = { timeouts: defaultWarehouseTimeouts, poolMax: 4, idleTimeoutMs: 10_000 };

const receipt = { ip: '198.51.100.1', userAgent: 'UA' };
function row(event: object, receivedAt = new Date('2026-03-01T12:00:00Z')): WarehouseRow {
  const result = validateEvent({ anonymousId: 'a1', timestamp: '2026-02-01T00:00:00.000Z', ...event });
  if (!result.valid) throw new Error(JSON.stringify(result.errors));
  return normalizeEvent(result.event, { ...receipt, receivedAt });
}

async function collect(changes: AsyncIterable<ChangedRow[]> | null): Promise<ChangedRow[][]> {
  if (!changes) throw new Error('no changes');
  const batches: ChangedRow[][] = [];
  for await (const batch of changes) batches.push(batch);
  return batches;
}

const originOf = (topic: string, first: number, rows: readonly unknown[]): WriteOrigin => ({
  topic,
  partition: 0,
  positions: rows.map((_, i) => `${first + i}:0`),
});

const failureOf = (promise: Promise<unknown>): Promise<unknown> =>
  promise.then(
    () => {
      throw new Error('expected a failure');
    },
    (error: unknown) => error,
  );

describe('the warehouse engines agree (real PostgreSQL and ClickHouse)', () => {
  const clusters = useTestClusters();
  let cluster: TestCluster;
  let pgUrl: string;
  let server: ClickHouseTestServer;
  let ch: ClickHouseClient;
  const engines = {} as Record<EngineName, WarehouseEngine>;

  /** Every row of one table of the account, read back as the engine stores it. */
  const tableRows = (name: EngineName, account: AccountLocation, table: WarehouseTable) =>
    name === 'postgres'
      ? postgresTableRows(pgUrl, account.schema, table)
      : clickhouseTableRows(ch, account.schema, table);

  /** Stored copies of a table's rows: ClickHouse's rows without FINAL, before any merge. */
  const storedCopies = async (name: EngineName, account: AccountLocation, table: WarehouseTable) => {
    if (name === 'postgres') {
      const [found] = await cluster.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM "${account.schema}"."${table}"`,
        [],
        'warehouse',
      );
      return found?.n ?? 0;
    }
    const stored = table === 'users' || table === 'groups' ? `${table}_rows` : table;
    const result = await ch.query({
      query: `SELECT toString(count()) AS n FROM \`${account.schema}\`.\`${stored}\``,
      format: 'JSONEachRow',
    });
    const [found] = await result.json<{ n: string }>();
    return Number(found?.n ?? 0);
  };

  beforeAll(async () => {
    cluster = await clusters.start('engines agree');
    pgUrl = await cluster.createDatabase('warehouse');
    server = await startClickHouseTestServer({ user: 'loader', password: 'loader-secret' });
    ch = createClient({ url: server.url, username: server.user, password: server.password });
    engines.postgres = new PostgresEngine(warehouseConnectionOf(pgUrl, 'pg'), options);
    engines.clickhouse = new ClickHouseEngine(clickhouseConnectionOf(server, 'ch'), options);
  }, 90_000);
  afterAll(async () => {
    await Promise.all(Object.values(engines).map((engine) => engine.close()));
    await ch?.close();
    await server?.destroy();
  }, 60_000);

  describe.each(engineNames)('%s', (name) => {
    const engine = () => engines[name];

    it('writes events, users, groups and aliases and reads back their values', async () => {
      const account = { accountId: 'acc-read', schema: `read_back_${name}` };
      const rows = [
        row({
          type: 'track',
          messageId: 'e1',
          event: 'Order Completed',
          timestamp: '2026-02-27T10:00:00.123Z',
          properties: { total: 12.5, sku: 'a', 'a.b': { c: [1, null, 'x'] } },
          context: { page: { url: 'https://shop.example/p' }, screen: { width: 1280, height: 800 } },
        }),
        row({ type: 'page', messageId: 'e2', name: 'Home', timestamp: '0001-01-01T00:00:00Z' }),
        row({ type: 'identify', messageId: 'u1', userId: 'user-1', traits: { plan: 'pro', seats: 3 } }),
        row({
          type: 'group',
          messageId: 'g1',
          groupId: 'group-1',
          timestamp: '9999-12-31T23:59:59.999Z',
          traits: { name: 'Acme' },
        }),
        row({ type: 'alias', messageId: 'a1', userId: 'user-1', previousId: 'anon-1' }),
      ];
      expect(await engine().writeRows(account, rows)).toEqual({ written: 5, duplicates: 0 });

      const events = await tableRows(name, account, 'events');
      expect(events.map((r) => [r.message_id, r.type, r.event, r.name, r.timestamp, r.received_at])).toEqual([
        ['e1', 'track', 'Order Completed', null, '2026-02-27T10:00:00.123Z', '2026-03-01T12:00:00.000Z'],
        ['e2', 'page', null, 'Home', '0001-01-01T00:00:00.000Z', '2026-03-01T12:00:00.000Z'],
      ]);
      expect(events[0]?.properties).toEqual({ total: 12.5, sku: 'a', 'a.b': { c: [1, null, 'x'] } });
      expect([events[0]?.context_page_url, events[0]?.context_screen_width]).toEqual([
        'https://shop.example/p',
        1280,
      ]);
      const users = await tableRows(name, account, 'users');
      expect(users.map((r) => [r.user_id, r.message_id, r.traits])).toEqual([
        ['user-1', 'u1', { plan: 'pro', seats: 3 }],
      ]);
      const groups = await tableRows(name, account, 'groups');
      expect(groups.map((r) => [r.group_id, r.timestamp, r.traits])).toEqual([
        ['group-1', '9999-12-31T23:59:59.999Z', { name: 'Acme' }],
      ]);
      const aliases = await tableRows(name, account, 'aliases');
      expect(aliases.map((r) => [r.message_id, r.user_id, r.previous_id])).toEqual([
        ['a1', 'user-1', 'anon-1'],
      ]);
      expect(await engine().storageBytes(account)).toBeGreaterThan(0);
    });

    it('adds no stored row for a batch delivered again from the same place', async () => {
      const account = { accountId: 'acc-redelivery', schema: `redelivery_${name}` };
      const batch = [
        ...Array.from({ length: 6 }, (_, i) =>
          row({ type: 'track', messageId: `t${i}`, event: 'Viewed', properties: { i } }),
        ),
        row({ type: 'identify', messageId: 'i1', userId: 'user-1', traits: { plan: 'free' } }),
        row({ type: 'group', messageId: 'g1', groupId: 'group-1', traits: { seats: 2 } }),
        row({ type: 'alias', messageId: 'al1', userId: 'user-1', previousId: 'anon' }),
      ];
      const origin = originOf('tracking', 100, batch);
      expect(await engine().writeRows(account, batch, origin)).toEqual({ written: 9, duplicates: 0 });
      const before = await Promise.all(
        (['events', 'users', 'groups', 'aliases'] as const).map((t) => storedCopies(name, account, t)),
      );
      expect(before).toEqual([6, 1, 1, 1]);
      expect(await engine().writeRows(account, batch, origin)).toEqual({ written: 0, duplicates: 9 });
      expect(
        await Promise.all(
          (['events', 'users', 'groups', 'aliases'] as const).map((t) => storedCopies(name, account, t)),
        ),
      ).toEqual(before);
    });

    it('upserts a stream record on its key, keeping the newer, and adds columns for new fields', async () => {
      const account = { accountId: 'acc-stream', schema: `stream_${name}` };
      expect(
        await engine().writeStream(account, 'crm_contacts', 'id', [
          { id: 'c1', email: 'a@example.com' },
          { id: 'c2', email: 'b@example.com' },
        ]),
      ).toEqual({ written: 2, addedColumns: ['email'] });
      expect(
        await engine().writeStream(account, 'crm_contacts', 'id', [
          { id: 'c1', email: 'new@example.com', score: 7, vip: true },
        ]),
      ).toEqual({ written: 1, addedColumns: ['score', 'vip'] });
      const changes = await collect(
        await engine().readChanges(
          account,
          { kind: 'stream', table: 'crm_contacts', since: { at: '1970-01-01T00:00:00.000000Z', key: '' } },
          { purpose: 'query', batchRows: 10 },
        ),
      );
      expect(changes.flat().map((c) => [c.key, c.row])).toEqual([
        ['c2', { id: 'c2', email: 'b@example.com' }],
        ['c1', { id: 'c1', email: 'new@example.com', score: 7, vip: true }],
      ]);
      expect(await engine().accountTables(account)).toContain('crm_contacts');
    });
  });

  it('keeps one copy when two writes of one batch both pass the stored-id check (ClickHouse: the insert token)', async () => {
    // Both writers are held at their insert until both have got there: each has checked the
    // stored ids and found none, so only the insert's deduplication token can keep one copy.
    let arrived = 0;
    let release: () => void = () => undefined;
    const bothThere = new Promise<void>((resolve) => (release = resolve));
    const gated: ClickHouseClientFactory = (connection, settings) => {
      const client = directClickHouseClient(connection, settings);
      const insert = client.insert.bind(client);
      client.insert = (async (params: Parameters<typeof insert>[0]) => {
        if (String(params.table).endsWith('.`events`')) {
          arrived += 1;
          if (arrived === 2) release();
          await bothThere;
        }
        return insert(params);
      }) as typeof client.insert;
      return client;
    };
    const first = new ClickHouseEngine(clickhouseConnectionOf(server, 'ch-a'), {
      ...options,
      connect: gated,
    });
    const second = new ClickHouseEngine(clickhouseConnectionOf(server, 'ch-b'), {
      ...options,
      connect: gated,
    });
    try {
      const account = { accountId: 'acc-race', schema: 'redelivery_race' };
      await first.ensureAccount(account);
      await second.ensureAccount(account);
      const batch = Array.from({ length: 5 }, (_, i) =>
        row({ type: 'track', messageId: `r${i}`, event: 'Raced' }),
      );
      const origin = originOf('tracking', 7, batch);
      const results = await Promise.all([
        first.writeRows(account, batch, origin),
        second.writeRows(account, batch, origin),
      ]);
      // Both wrote as far as they can tell; the server kept one insert.
      expect(results).toEqual([
        { written: 5, duplicates: 0 },
        { written: 5, duplicates: 0 },
      ]);
      expect(arrived).toBe(2);
      expect(await storedCopies('clickhouse', account, 'events')).toBe(5);
    } finally {
      await first.close();
      await second.close();
    }
  });

  describe('users and groups are newest-wins under any order and split of the same events', () => {
    const keys = ['plan', 'name', 'seats', 'k1', 'k2'];
    const traitValue = fc.oneof(
      fc.string({ maxLength: 6 }),
      fc.integer({ min: -1000, max: 1000 }),
      fc.boolean(),
      fc.constant(null),
      fc.dictionary(fc.constantFrom('x', 'y'), fc.integer(), { maxKeys: 2 }),
    );
    // Few times, so that ties are common and the received time and the message id decide.
    const times = ['2026-01-01T00:00:00.000Z', '2026-01-02T00:00:00.000Z', '2026-01-03T00:00:00.000Z'];
    const eventArb = fc.record({
      kind: fc.constantFrom('identify', 'group'),
      id: fc.integer({ min: 0, max: 2 }),
      traits: fc.dictionary(fc.constantFrom(...keys), traitValue, { maxKeys: 4 }),
      timestamp: fc.option(fc.constantFrom(...times), { nil: undefined }),
      received: fc.integer({ min: 0, max: 2 }),
      anonymousId: fc.constantFrom('anon-a', 'anon-b'),
      sentTwice: fc.boolean(),
    });
    /** An order and a split of the events: a sort key per event, batch sizes, batches delivered twice. */
    const delivery = fc.record({
      order: fc.array(fc.nat(), { minLength: 40, maxLength: 40 }),
      sizes: fc.array(fc.integer({ min: 1, max: 5 }), { minLength: 40, maxLength: 40 }),
      again: fc.array(fc.boolean(), { minLength: 40, maxLength: 40 }),
    });

    it('gives the same folded rows in two orders on each engine, and the same rows on both', async () => {
      const accounts = {
        first: { accountId: 'acc-fold-1', schema: 'fold_first' },
        second: { accountId: 'acc-fold-2', schema: 'fold_second' },
      };
      let run = 0;
      let position = 0;
      let compared = 0;
      await fc.assert(
        fc.asyncProperty(
          fc.array(eventArb, { minLength: 1, maxLength: 14 }),
          delivery,
          delivery,
          async (specs, a, b) => {
            run += 1;
            // An event sent twice in one request is one unit: both copies land in one batch.
            const units = specs.map((spec, i) => {
              const id = `r${run}-${spec.kind === 'identify' ? 'user' : 'group'}-${spec.id}`;
              const one = row(
                {
                  type: spec.kind,
                  messageId: `r${run}-m${i}`,
                  anonymousId: spec.anonymousId,
                  ...(spec.kind === 'identify' ? { userId: id } : { groupId: id }),
                  // As a request body gives them: parsed JSON (fast-check's objects have no prototype).
                  traits: parseJsonText(JSON.stringify(spec.traits)),
                  ...(spec.timestamp ? { timestamp: spec.timestamp } : {}),
                },
                new Date(Date.UTC(2026, 2, 1, 12, 0, spec.received)),
              );
              // The door requires a timestamp; a row without one (an import's) sorts oldest.
              if (!spec.timestamp) (one.row as Record<string, unknown>).timestamp = null;
              return spec.sentTwice ? [one, structuredClone(one)] : [one];
            });
            const batchesOf = (d: { order: number[]; sizes: number[]; again: boolean[] }) => {
              const ordered = units
                .map((u, i) => ({ u, k: d.order[i % d.order.length] ?? 0, i }))
                .sort((x, y) => x.k - y.k || x.i - y.i)
                .map(({ u }) => u);
              const batches: { rows: WarehouseRow[]; again: boolean }[] = [];
              for (let i = 0, s = 0; i < ordered.length; s += 1) {
                const size = d.sizes[s % d.sizes.length] ?? 1;
                batches.push({
                  rows: ordered.slice(i, i + size).flat(),
                  again: d.again[s % d.again.length] ?? false,
                });
                i += size;
              }
              return batches;
            };
            for (const [account, d] of [
              [accounts.first, a],
              [accounts.second, b],
            ] as const) {
              for (const { rows: batch, again } of batchesOf(d)) {
                const origin = originOf('fold', position, batch);
                position += batch.length;
                for (const engineName of engineNames) {
                  await engines[engineName].writeRows(account, batch, origin);
                  // Kafka delivers the batch again (a consumer died before committing).
                  if (again) await engines[engineName].writeRows(account, batch, origin);
                }
              }
            }
            for (const table of ['users', 'groups'] as const) {
              const ofRun = (rows: Record<string, unknown>[]) =>
                rows.filter((r) =>
                  String(r[table === 'users' ? 'user_id' : 'group_id']).startsWith(`r${run}-`),
                );
              const expected = ofRun(await tableRows('postgres', accounts.first, table));
              expect(ofRun(await tableRows('postgres', accounts.second, table))).toEqual(expected);
              expect(ofRun(await tableRows('clickhouse', accounts.first, table))).toEqual(expected);
              expect(ofRun(await tableRows('clickhouse', accounts.second, table))).toEqual(expected);
              compared += expected.length;
            }
          },
        ),
        // A failing run prints its seed and case; shrinking through four loads a run would take long.
        { numRuns: 50, endOnFailure: true },
      );
      expect(run).toBeGreaterThanOrEqual(50);
      expect(compared).toBeGreaterThan(100);
    }, 300_000);
  });

  describe('changes and named queries', () => {
    const account = { accountId: 'acc-changes', schema: 'changes_both' };
    const since = { at: '1970-01-01T00:00:00.000000Z', key: '' };
    // 23 events and 7 users over three receipt times: ties in time are ordered by key.
    const rows = [
      ...Array.from({ length: 23 }, (_, i) =>
        row(
          {
            type: i % 4 === 0 ? 'page' : 'track',
            messageId: `ev-${String(i).padStart(2, '0')}`,
            ...(i % 4 === 0 ? { name: 'Home' } : { event: i % 3 === 0 ? 'Signed Up' : 'Viewed' }),
            timestamp: `2026-02-${String(10 + (i % 5)).padStart(2, '0')}T08:00:00.000Z`,
            properties: { i, tag: i % 2 === 0 ? 'even' : null, flag: i % 3 === 0, list: [i] },
          },
          new Date(Date.UTC(2026, 2, 1 + (i % 3), 12)),
        ),
      ),
      ...Array.from({ length: 7 }, (_, i) =>
        row(
          { type: 'identify', messageId: `id-${i}`, userId: `user-${i}`, traits: { n: i } },
          new Date(Date.UTC(2026, 2, 1 + (i % 2), 12)),
        ),
      ),
      row({ type: 'group', messageId: 'gr-1', groupId: 'group-1', traits: { n: 1 } }),
      row({ type: 'alias', messageId: 'al-1', userId: 'user-1', previousId: 'anon-1' }),
    ];
    beforeAll(async () => {
      for (const engineName of engineNames) {
        expect(await engines[engineName].writeRows(account, rows)).toEqual({ written: 32, duplicates: 0 });
        await engines[engineName].writeStream(
          account,
          'crm_deals',
          'id',
          Array.from({ length: 9 }, (_, i) => ({ id: `d${i}`, amount: i * 10 })),
        );
      }
    });

    /** The whole table read in calls of `batchRows`, each call continuing from the last watermark. */
    async function pagedRead(
      engineName: EngineName,
      request: (since: ChangeRequest['since']) => ChangeRequest,
    ) {
      const seen: ChangedRow[] = [];
      let watermark = since;
      for (let call = 0; call < 100; call += 1) {
        const changes = await engines[engineName].readChanges(account, request(watermark), {
          purpose: 'query',
          batchRows: 3,
        });
        const batches = await collect(changes);
        const first = batches[0];
        if (!first) return seen;
        // Each call's batches are at most batchRows; a call here takes one batch and stops.
        expect(batches.every((batch) => batch.length <= 3)).toBe(true);
        seen.push(...first);
        const last = first[first.length - 1] as ChangedRow;
        watermark = { at: last.at, key: last.key };
      }
      throw new Error('paging did not end');
    }

    it.each([
      ['users', 7, (s: ChangeRequest['since']): ChangeRequest => ({ kind: 'users', since: s })],
      [
        'events named Signed Up or Home',
        12,
        (s: ChangeRequest['since']): ChangeRequest => ({
          kind: 'events',
          since: s,
          receivedSince: new Date(0),
          names: ['Signed Up', 'Home'],
        }),
      ],
      [
        'events received since March 2',
        15,
        (s: ChangeRequest['since']): ChangeRequest => ({
          kind: 'events',
          since: s,
          receivedSince: new Date('2026-03-02T00:00:00Z'),
          names: null,
        }),
      ],
      [
        'a stream table',
        9,
        (s: ChangeRequest['since']): ChangeRequest => ({ kind: 'stream', table: 'crm_deals', since: s }),
      ],
    ])('pages %s by watermark, each row once, the same on both engines', async (_what, count, request) => {
      const pg = await pagedRead('postgres', request);
      const clickhouse = await pagedRead('clickhouse', request);
      expect(pg).toHaveLength(count);
      expect(new Set(pg.map((c) => c.key)).size).toBe(count);
      const whole = (
        await collect(
          await engines.postgres.readChanges(account, request(since), { purpose: 'query', batchRows: 1000 }),
        )
      ).flat();
      expect(pg).toEqual(whole);
      if (request(since).kind === 'stream') {
        // A stream's change time is when each engine synced it: the keys and records agree.
        expect(clickhouse.map((c) => [c.key, c.row])).toEqual(pg.map((c) => [c.key, c.row]));
      } else {
        expect(clickhouse).toEqual(pg);
      }
    });

    it('answers every named query the same on both engines', async () => {
      const q = { purpose: 'query' } as const;
      const asked = async (engineName: EngineName) => {
        const engine = engines[engineName];
        return {
          tables: await engine.query(account, 'existing_tables', {}, q),
          hasRows: await engine.query(account, 'has_rows', {}, q),
          names: await engine.query(account, 'event_names', { since: new Date('2026-02-11T00:00:00Z') }, q),
          types: await engine.query(account, 'event_property_types', { since: new Date(0) }, q),
          freshness: await Promise.all(
            (['events', 'users', 'groups', 'aliases'] as const).map((table) =>
              engine.query(account, 'table_freshness', { table, now: new Date('2026-03-03T06:00:00Z') }, q),
            ),
          ),
          received: await Promise.all(
            ['2026-03-01', '2026-03-02', '2026-03-03', '2026-03-04'].map((day) =>
              engine.query(account, 'rows_received_on', { day }, q),
            ),
          ),
          emptyHasRows: await engine.query({ accountId: 'x', schema: 'never_written' }, 'has_rows', {}, q),
        };
      };
      const pg = await asked('postgres');
      expect(pg.names.length).toBeGreaterThan(1);
      expect(pg.types.length).toBeGreaterThan(4);
      expect(pg.received.map(([r]) => r?.rows)).toEqual([14, 11, 7, 0]);
      expect(await asked('clickhouse')).toEqual(pg);
    });
  });

  it('classifies what a real server answers: wrong password, a row it refuses, a killed server', async () => {
    const engine = engines.clickhouse;
    const wrong = new ClickHouseEngine(
      { ...clickhouseConnectionOf(server, 'ch-wrong'), password: 'not-it' },
      options,
    );
    try {
      expect(engine.classifyError(await failureOf(wrong.probe()))).toBe('misconfigured');
    } finally {
      await wrong.close();
    }
    const account = { accountId: 'acc-errors', schema: 'errors_clickhouse' };
    const bad = row({ type: 'track', messageId: 'x', event: 'Bad' });
    (bad.row as Record<string, unknown>).message_id = null;
    expect(engine.classifyError(await failureOf(engine.writeRows(account, [bad])))).toBe('data');
    server.kill();
    try {
      // The kill lands at once; the first probe after it that fails is what a loader meets.
      let down: unknown;
      await waitFor(
        async () =>
          (down = await engine.probe().then(
            () => undefined,
            (error: unknown) => error,
          )) !== undefined,
        10_000,
        'the killed server to refuse',
      );
      expect(engine.classifyError(down)).toBe('unavailable');
    } finally {
      await server.restart();
    }
    await expect(engine.probe()).resolves.toBeUndefined();
  }, 90_000);
});
