import fc from 'fast-check';
import { Client } from 'pg';
import { startClickHouseTestServer, type ClickHouseTestServer } from '@pipeline/clickhouse/testing';
import { normalizeEvent, validateEvent, type WarehouseRow } from '@pipeline/events';
import { useTestClusters, type TestCluster } from '@pipeline/postgres/testing';
import type { WarehouseConnection } from '@pipeline/tenancy';
import { warehouseConnectionOf } from '../../testing/warehouse-connection';
import { PostgresEngine } from '../postgres/postgres-engine';
import type { AccountLocation, WarehouseEngine } from '../warehouse-engine';
import { defaultWarehouseTimeouts } from '../warehouse-pool';
import { ClickHouseEngine } from './clickhouse-engine';

// Moves between a PostgreSQL and a ClickHouse warehouse through exportTable/importRows, batch
// by batch, as the move executor runs them: real PostgreSQL clusters and a real (chdb-backed)
// ClickHouse server.

const engineOptions = { timeouts: defaultWarehouseTimeouts, poolMax: 3, idleTimeoutMs: 10_000 };
const clusters = useTestClusters();

function row(event: object, receivedAt: Date): WarehouseRow {
  const result = validateEvent({ anonymousId: 'a1', timestamp: receivedAt.toISOString(), ...event });
  if (!result.valid) throw new Error(JSON.stringify(result.errors));
  return normalizeEvent(result.event, { receivedAt, ip: '198.51.100.1', userAgent: 'UA' });
}

/** Copies every table of the account, `batchRows` rows per batch; per table rows copied, merged, batches. */
async function copyAccount(
  from: WarehouseEngine,
  to: WarehouseEngine,
  account: AccountLocation,
  batchRows: number,
  onTarget: AccountLocation = account,
): Promise<Record<string, { copied: number; merged: number; batches: number }>> {
  const result: Record<string, { copied: number; merged: number; batches: number }> = {};
  for (const table of await from.accountTables(account)) {
    const exported = await from.exportTable(account, table, { batchRows });
    if (!exported) continue;
    const counts = { copied: 0, merged: 0, batches: 0 };
    for await (const batch of exported.batches) {
      counts.copied += batch.rows;
      counts.batches += 1;
      counts.merged += await to.importRows(onTarget, exported.shape, batch);
    }
    result[table] = counts;
  }
  return result;
}

const keys: Record<string, string> = {
  events: 'message_id',
  users: 'user_id',
  groups: 'group_id',
  aliases: 'message_id',
  crm_contacts: 'id',
};

/** A table's rows as PostgreSQL holds them, each as JSON (jsonb compared by value, times as text in UTC). */
async function pgRows(client: Client, schema: string, table: string): Promise<Record<string, unknown>[]> {
  await client.query(`SET TIME ZONE 'UTC'`);
  const { rows } = await client.query<{ r: Record<string, unknown> }>(
    `SELECT to_jsonb(t) AS r FROM ${schema}."${table}" t ORDER BY "${keys[table]}" COLLATE "C"`,
  );
  return rows.map((r) => r.r);
}

function clickhouseConnection(server: ClickHouseTestServer, id: string): WarehouseConnection {
  return {
    warehouseId: id,
    engine: 'clickhouse',
    host: '127.0.0.1',
    port: server.port,
    database: 'default',
    user: server.user,
    password: server.password,
    tlsMode: 'disable',
    owner: 'platform',
    maxConnections: 5,
  };
}

describe('moving an account between PostgreSQL and ClickHouse (real servers)', () => {
  let server: ClickHouseTestServer;
  let pg: TestCluster;
  let source: Client;
  let back: Client;
  let postgres: PostgresEngine;
  let postgresBack: PostgresEngine;
  let clickhouse: ClickHouseEngine;

  beforeAll(async () => {
    [server, pg] = await Promise.all([startClickHouseTestServer(), clusters.start('move-ch')]);
    source = new Client({ connectionString: pg.url });
    await source.connect();
    await source.query('CREATE DATABASE move_back');
    back = new Client({ connectionString: pg.urlFor('move_back') });
    await back.connect();
    postgres = new PostgresEngine(warehouseConnectionOf(pg.url, 'w-pg'), engineOptions);
    postgresBack = new PostgresEngine(
      warehouseConnectionOf(pg.urlFor('move_back'), 'w-pg-back'),
      engineOptions,
    );
    clickhouse = new ClickHouseEngine(clickhouseConnection(server, 'w-ch'), engineOptions);
  }, 120_000);
  afterAll(async () => {
    await clickhouse?.close();
    await postgres?.close();
    await postgresBack?.close();
    await source?.end();
    await back?.end();
    await server?.destroy();
  });

  it('copies PostgreSQL to ClickHouse and back with equal rows, days and hashes; a second copy changes nothing', async () => {
    const account: AccountLocation = { accountId: 'acc-pg-ch', schema: 'account_pg_ch' };
    const day1 = new Date('2026-03-01T12:00:00.123Z');
    const day2 = new Date('2026-03-02T23:59:59.999Z');
    await postgres.ensureAccount(account);
    await postgres.writeRows(account, [
      row(
        {
          type: 'track',
          messageId: 'e1',
          event: 'Signed Up',
          properties: { a: 'x\ty\nz\\', 'ключ €': '🎉', '\u2028odd"key': [1, 2.5, null, true] },
        },
        day1,
      ),
      row(
        {
          type: 'track',
          messageId: 'e2',
          event: 'Paid',
          timestamp: '0001-01-01T00:00:00.000Z',
          properties: { total: 9.5, n: null },
        },
        day2,
      ),
      row(
        { type: 'page', messageId: 'e3', name: 'Home — ünïcode', timestamp: '9999-12-31T23:59:59.999Z' },
        day2,
      ),
      row(
        {
          type: 'page',
          messageId: 'e4',
          name: 'Tab\there',
          context: { screen: { width: 1920, height: 1080 } },
        },
        day2,
      ),
      // Out of order: the newer identify first, then an older one whose traits only fill gaps.
      row(
        {
          type: 'identify',
          messageId: 'i2',
          userId: 'u1',
          timestamp: '2026-03-02T10:00:00Z',
          traits: { plan: 'pro', 'ü-key': { nested: 'yes' } },
        },
        day2,
      ),
      row(
        {
          type: 'identify',
          messageId: 'i1',
          userId: 'u1',
          timestamp: '2026-03-01T10:00:00Z',
          traits: { plan: 'free', email: 'a@example.com' },
        },
        day1,
      ),
      row({ type: 'identify', messageId: 'i3', userId: 'u2', traits: { plan: 'free' } }, day1),
      row({ type: 'group', messageId: 'g1', groupId: 'g-1', traits: { name: 'Acme', size: 10 } }, day1),
      row(
        {
          type: 'group',
          messageId: 'g2',
          groupId: 'g-1',
          timestamp: '2026-02-01T00:00:00Z',
          traits: { name: 'Old', city: 'Oslo' },
        },
        day2,
      ),
      row({ type: 'alias', messageId: 'al1', userId: 'u1', previousId: 'a1' }, day1),
    ]);
    await postgres.writeStream(account, 'crm_contacts', 'id', [
      { id: 'c1', name: 'Ann', score: 3, vip: true, tags: ['a', 'b'] },
      { id: 'c2', name: 'line\nbreak\\', score: 4.25, vip: false, tags: [] },
      { id: 'c3', name: null },
    ]);
    const tables = ['events', 'users', 'groups', 'aliases', 'crm_contacts'];
    expect(await postgres.accountTables(account)).toEqual(tables);

    const first = await copyAccount(postgres, clickhouse, account, 2);
    expect(first).toEqual({
      events: { copied: 4, merged: 4, batches: 2 },
      users: { copied: 2, merged: 2, batches: 1 },
      groups: { copied: 1, merged: 1, batches: 1 },
      aliases: { copied: 1, merged: 1, batches: 1 },
      crm_contacts: { copied: 3, merged: 3, batches: 2 },
    });
    expect(await clickhouse.accountTables(account)).toEqual(tables);
    const columnsOf = async (engine: WarehouseEngine, table: string) => {
      const shape = (await engine.exportTable(account, table, { batchRows: 1 }))?.shape;
      return { ...shape, columns: [...(shape?.columns ?? [])].sort((a, b) => a.name.localeCompare(b.name)) };
    };
    for (const table of tables) {
      // Both engines describe the table alike, in PostgreSQL's type names.
      expect(await columnsOf(clickhouse, table)).toEqual(await columnsOf(postgres, table));
      const days = await postgres.tableDays(account, table);
      expect(days.length).toBeGreaterThan(0);
      expect(await clickhouse.tableDays(account, table)).toEqual(days);
      for (const { day } of days)
        expect(await clickhouse.tableKeysOn(account, table, day)).toEqual(
          await postgres.tableKeysOn(account, table, day),
        );
    }

    // Again: nothing new, nothing changed.
    const again = await copyAccount(postgres, clickhouse, account, 3);
    expect(Object.values(again).map((c) => c.merged)).toEqual([0, 0, 0, 0, 0]);

    // Back to a second PostgreSQL database: every row equal to the source's, column by column.
    const back1 = await copyAccount(clickhouse, postgresBack, account, 2);
    expect(Object.values(back1).map((c) => c.copied)).toEqual([4, 2, 1, 1, 3]);
    for (const table of tables) {
      const original = await pgRows(source, account.schema, table);
      expect(original.length).toBeGreaterThan(0);
      expect(await pgRows(back, account.schema, table)).toEqual(original);
      expect(await postgresBack.tableDays(account, table)).toEqual(await postgres.tableDays(account, table));
    }
    const [user] = await pgRows(back, account.schema, 'users');
    expect(user!.traits).toEqual({ plan: 'pro', 'ü-key': { nested: 'yes' }, email: 'a@example.com' });
    const [event2] = (await pgRows(back, account.schema, 'events')).filter((r) => r.message_id === 'e2');
    expect(event2!.timestamp).toBe('0001-01-01T00:00:00+00:00');
    const again2 = await copyAccount(clickhouse, postgresBack, account, 10);
    expect(Object.values(again2).map((c) => c.merged)).toEqual([0, 0, 0, 0, 0]);

    // The ClickHouse writers keep loading the copied tables.
    await clickhouse.writeStream(account, 'crm_contacts', 'id', [{ id: 'c4', name: 'Dee', score: 1 }]);
    expect((await clickhouse.tableDays(account, 'crm_contacts')).reduce((n, d) => n + d.rows, 0)).toBe(4);
  }, 120_000);

  it('copies ClickHouse to ClickHouse: the folded users, days and keys equal, a second copy adds nothing', async () => {
    const from: AccountLocation = { accountId: 'acc-ch', schema: 'account_ch_from' };
    const to: AccountLocation = { accountId: 'acc-ch', schema: 'account_ch_to' };
    const other = new ClickHouseEngine(clickhouseConnection(server, 'w-ch-2'), engineOptions);
    try {
      await clickhouse.writeRows(from, [
        ...Array.from({ length: 5 }, (_, i) =>
          row(
            { type: 'track', messageId: `t${i}`, event: 'Tick', properties: { i, 'k\u00e9y': 'v' } },
            new Date(Date.UTC(2026, 4, 1 + (i % 2))),
          ),
        ),
        row(
          {
            type: 'identify',
            messageId: 'n',
            userId: 'u1',
            timestamp: '2026-05-02T00:00:00Z',
            traits: { plan: 'pro' },
          },
          new Date('2026-05-02T00:00:01Z'),
        ),
        row(
          {
            type: 'identify',
            messageId: 'o',
            userId: 'u1',
            timestamp: '2026-05-01T00:00:00Z',
            traits: { plan: 'free', city: 'Oslo' },
          },
          new Date('2026-05-02T00:00:02Z'),
        ),
        row(
          { type: 'group', messageId: 'g', groupId: 'g1', traits: { n: 1 } },
          new Date('2026-05-01T00:00:00Z'),
        ),
      ]);
      await clickhouse.writeStream(from, 'tickets', 'id', [
        { id: 't1', state: 'open', meta: { a: 1 } },
        { id: 't2', state: 'closed', meta: null },
        { id: 't3', n: 2.5 },
      ]);
      const tables = ['events', 'users', 'groups', 'aliases', 'tickets'];
      expect(await clickhouse.accountTables(from)).toEqual(tables);
      const first = await copyAccount(clickhouse, other, from, 2, to);
      expect(Object.values(first).map((c) => [c.copied, c.merged, c.batches])).toEqual([
        [5, 5, 3],
        [1, 1, 1],
        [1, 1, 1],
        [0, 0, 0],
        [3, 3, 2],
      ]);
      for (const table of tables) {
        expect(await other.tableDays(to, table)).toEqual(await clickhouse.tableDays(from, table));
        const exported = async (engine: WarehouseEngine, account: AccountLocation) => {
          const result = await engine.exportTable(account, table, { batchRows: 100 });
          let text = '';
          for await (const batch of result!.batches) text += batch.text;
          return { shape: result!.shape, text };
        };
        expect(await exported(other, to)).toEqual(await exported(clickhouse, from));
      }
      const again = await copyAccount(clickhouse, other, from, 2, to);
      expect(Object.values(again).map((c) => c.merged)).toEqual([0, 0, 0, 0, 0]);
    } finally {
      await other.close();
    }
  }, 60_000);

  it('never rolls back a newer user already written to the ClickHouse target', async () => {
    const account: AccountLocation = { accountId: 'acc-newer', schema: 'account_newer' };
    await postgres.ensureAccount(account);
    await clickhouse.ensureAccount(account);
    await postgres.writeRows(account, [
      row(
        {
          type: 'identify',
          messageId: 'old',
          userId: 'u9',
          timestamp: '2026-01-01T00:00:00Z',
          traits: { plan: 'free', city: 'Oslo' },
        },
        new Date('2026-01-01T00:00:01Z'),
      ),
      row(
        {
          type: 'identify',
          messageId: 'both',
          userId: 'u8',
          timestamp: '2026-01-02T00:00:00Z',
          traits: { plan: 'pro' },
        },
        new Date('2026-01-02T00:00:01Z'),
      ),
      row(
        {
          type: 'identify',
          messageId: 'older8',
          userId: 'u8',
          timestamp: '2026-01-01T00:00:00Z',
          traits: { plan: 'x', city: 'Rome' },
        },
        new Date('2026-01-02T00:00:02Z'),
      ),
    ]);
    // Double writes put the newer identify of u9, and u8's newest event alone, on the target first.
    await clickhouse.writeRows(account, [
      row(
        {
          type: 'identify',
          messageId: 'new',
          userId: 'u9',
          timestamp: '2026-02-01T00:00:00Z',
          traits: { plan: 'pro' },
        },
        new Date('2026-02-01T00:00:01Z'),
      ),
      row(
        {
          type: 'identify',
          messageId: 'both',
          userId: 'u8',
          timestamp: '2026-01-02T00:00:00Z',
          traits: { plan: 'pro' },
        },
        new Date('2026-01-02T00:00:01Z'),
      ),
    ]);
    await copyAccount(postgres, clickhouse, account, 10);
    await copyAccount(clickhouse, postgresBack, account, 10);
    const users = await pgRows(back, account.schema, 'users');
    expect(users.map((u) => [u.user_id, u.message_id, u.traits])).toEqual([
      ['u8', 'both', { plan: 'pro', city: 'Rome' }],
      ['u9', 'new', { plan: 'pro', city: 'Oslo' }],
    ]);
  }, 60_000);

  it('round-trips generated events PostgreSQL -> ClickHouse -> PostgreSQL unchanged', async () => {
    // Full Unicode (astral planes, controls, U+2028), well formed (PostgreSQL's UTF-8 has no lone surrogates), NUL-free.
    const text = fc
      .string({ unit: 'binary', maxLength: 12 })
      .filter((s) => s.isWellFormed() && !s.includes('\u0000'));
    const time = fc
      .date({
        min: new Date('0001-01-01T00:00:00Z'),
        max: new Date('9999-12-31T23:59:59.999Z'),
        noInvalidDate: true,
      })
      .map((d) => d.toISOString());
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(
          fc.record({
            id: fc.string({ unit: 'grapheme-ascii', minLength: 1, maxLength: 10 }),
            name: text,
            timestamp: time,
            props: fc.dictionary(text, fc.oneof(text, fc.integer(), fc.boolean(), fc.constant(null))),
          }),
          { minLength: 1, maxLength: 8, selector: (e) => e.id },
        ),
        async (events) => {
          run += 1;
          const account: AccountLocation = { accountId: `acc-gen-${run}`, schema: `account_gen_${run}` };
          await postgres.ensureAccount(account);
          const receivedAt = new Date('2026-04-01T00:00:00Z');
          await postgres.writeRows(
            account,
            events.map((e) =>
              row(
                {
                  type: 'track',
                  messageId: e.id,
                  event: e.name || 'x',
                  timestamp: e.timestamp,
                  properties: e.props,
                },
                receivedAt,
              ),
            ),
          );
          await postgres.writeRows(
            account,
            events.map((e, i) =>
              row(
                {
                  type: 'identify',
                  messageId: `i-${e.id}`,
                  userId: `u${i % 2}`,
                  timestamp: e.timestamp,
                  traits: e.props,
                },
                receivedAt,
              ),
            ),
          );
          await copyAccount(postgres, clickhouse, account, 3);
          for (const table of ['events', 'users'])
            expect(await clickhouse.tableDays(account, table)).toEqual(
              await postgres.tableDays(account, table),
            );
          await copyAccount(clickhouse, postgresBack, account, 3);
          for (const table of ['events', 'users'])
            expect(await pgRows(back, account.schema, table)).toEqual(
              await pgRows(source, account.schema, table),
            );
        },
      ),
      { numRuns: 5 },
    );
  }, 240_000);
});
