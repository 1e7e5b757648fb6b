import fc from 'fast-check';
import { Client } from 'pg';
import { normalizeEvent, validateEvent, type WarehouseRow } from '@pipeline/events';
import { createScratchDatabase, DEFAULT_DATABASE_URL, type ScratchDatabase } from '@pipeline/postgres';
import { warehouseConnectionOf as connectionOf } from '../../testing/warehouse-connection';
import { PostgresEngine } from './postgres-engine';
import type { AccountLocation, WarehouseEngine } from '../warehouse-engine';
import { defaultWarehouseTimeouts } from '../warehouse-pool';
import { checkedShape, mergeStatement } from './table-copy';

const baseUrl = process.env.DATABASE_URL || DEFAULT_DATABASE_URL;
const engineOptions = { timeouts: defaultWarehouseTimeouts, poolMax: 3, idleTimeoutMs: 10_000 };

function row(event: object, receivedAt: Date): WarehouseRow {
  const result = validateEvent({ anonymousId: 'a1', timestamp: receivedAt.toISOString(), ...event });
  if (!result.valid) throw new Error(JSON.stringify(result.errors));
  return normalizeEvent(result.event, { receivedAt, ip: '198.51.100.1', userAgent: 'UA' });
}

/** Copies every table of the account, `batchRows` rows per batch; rows merged per table. */
async function copyAccount(
  from: WarehouseEngine,
  to: WarehouseEngine,
  account: AccountLocation,
  batchRows: number,
): Promise<Record<string, { copied: number; merged: number; batches: number }>> {
  const result: Record<string, { copied: number; merged: number; batches: number }> = {};
  for (const table of await from.accountTables(account)) {
    const exported = await from.exportTable(account, table, { batchRows });
    if (!exported) continue;
    const counts = { copied: 0, merged: 0, batches: 0 };
    for await (const batch of exported.batches) {
      counts.copied += batch.rows;
      counts.batches += 1;
      counts.merged += await to.importRows(account, exported.shape, batch);
    }
    result[table] = counts;
  }
  return result;
}

async function rowsOf(client: Client, schema: string, table: string, key: string) {
  const { rows } = await client.query(`SELECT * FROM ${schema}."${table}" ORDER BY "${key}"`);
  return rows as Record<string, unknown>[];
}

describe('copying an account between PostgreSQL warehouses (real PostgreSQL)', () => {
  let source: ScratchDatabase;
  let target: ScratchDatabase;
  let sourceClient: Client;
  let targetClient: Client;
  let from: PostgresEngine;
  let to: PostgresEngine;
  const account: AccountLocation = { accountId: 'acc-copy', schema: 'account_copy' };

  beforeAll(async () => {
    source = await createScratchDatabase(baseUrl, 'table copy source');
    target = await createScratchDatabase(baseUrl, 'table copy target');
    sourceClient = new Client({ connectionString: source.url });
    targetClient = new Client({ connectionString: target.url });
    await sourceClient.connect();
    await targetClient.connect();
    from = new PostgresEngine(connectionOf(source.url, 'w-source'), engineOptions);
    to = new PostgresEngine(connectionOf(target.url, 'w-target'), engineOptions);
  });
  afterAll(async () => {
    await from.close();
    await to.close();
    await sourceClient.end();
    await targetClient.end();
    await source.drop();
    await target.drop();
  });

  it('copies every table with equal values, and a second copy changes nothing', async () => {
    const day1 = new Date('2026-03-01T12:00:00Z');
    const day2 = new Date('2026-03-02T08:00:00Z');
    await from.ensureAccount(account);
    await from.writeRows(account, [
      row({ type: 'track', messageId: 'e1', event: 'Signed Up', properties: { a: 'x\ty\nz\\' } }, day1),
      row({ type: 'track', messageId: 'e2', event: 'Paid', properties: { total: 9.5, n: null } }, day2),
      row({ type: 'page', messageId: 'e3', name: 'Home — ünïcode' }, day2),
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
      row(
        {
          type: 'identify',
          messageId: 'i2',
          userId: 'u1',
          timestamp: '2026-03-02T10:00:00Z',
          traits: { plan: 'pro' },
        },
        day2,
      ),
      row({ type: 'group', messageId: 'g1', groupId: 'g-1', traits: { name: 'Acme' } }, day1),
      row({ type: 'alias', messageId: 'al1', userId: 'u1', previousId: 'a1' }, day1),
    ]);
    await from.writeStream(account, 'crm_contacts', 'id', [
      { id: 'c1', name: 'Ann', score: 3, vip: true, tags: ['a', 'b'] },
      { id: 'c2', name: 'line\nbreak', score: 4.25, vip: false, tags: [] },
      { id: 'c3', name: null },
    ]);

    expect(await from.accountTables(account)).toEqual([
      'events',
      'users',
      'groups',
      'aliases',
      'crm_contacts',
    ]);
    const first = await copyAccount(from, to, account, 2);
    expect(first).toEqual({
      events: { copied: 3, merged: 3, batches: 2 },
      users: { copied: 1, merged: 1, batches: 1 },
      groups: { copied: 1, merged: 1, batches: 1 },
      aliases: { copied: 1, merged: 1, batches: 1 },
      crm_contacts: { copied: 3, merged: 3, batches: 2 },
    });
    const keys = {
      events: 'message_id',
      users: 'user_id',
      groups: 'group_id',
      aliases: 'message_id',
      crm_contacts: 'id',
    };
    for (const [table, key] of Object.entries(keys)) {
      const copied = await rowsOf(targetClient, account.schema, table, key);
      expect(copied).toEqual(await rowsOf(sourceClient, account.schema, table, key));
      expect(await to.tableDays(account, table)).toEqual(await from.tableDays(account, table));
    }
    const [user] = await rowsOf(targetClient, account.schema, 'users', 'user_id');
    expect(user!.traits).toEqual({ plan: 'pro', email: 'a@example.com' });
    expect(user!._trait_orders).toEqual(
      (await rowsOf(sourceClient, account.schema, 'users', 'user_id'))[0]!._trait_orders,
    );

    const again = await copyAccount(from, to, account, 1000);
    expect(Object.values(again).map((c) => c.merged)).toEqual([0, 0, 0, 0, 0]);
    expect(await to.tableDays(account, 'events')).toEqual([
      { day: '2026-03-01', rows: 1, hash: expect.stringMatching(/^\d+$/) },
      { day: '2026-03-02', rows: 2, hash: expect.stringMatching(/^\d+$/) },
    ]);
    expect(await to.tableKeysOn(account, 'events', '2026-03-02')).toEqual(['e2', 'e3']);
    // The stream writer of the target keeps loading the copied table (columns known there).
    await to.writeStream(account, 'crm_contacts', 'id', [{ id: 'c4', name: 'Dee', score: 1 }]);
    expect((await rowsOf(targetClient, account.schema, 'crm_contacts', 'id')).map((r) => r.id)).toEqual([
      'c1',
      'c2',
      'c3',
      'c4',
    ]);
  });

  it('never rolls back a newer user or stream row already on the target', async () => {
    const newer = { accountId: 'acc-merge', schema: 'account_merge' };
    await from.ensureAccount(newer);
    await to.ensureAccount(newer);
    // The source has the older identify and a trait the target never saw.
    await from.writeRows(newer, [
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
    ]);
    // A double write put the newer one on the target first.
    await to.writeRows(newer, [
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
    ]);
    await to.writeStream(newer, 'tickets', 'id', [{ id: 't1', state: 'closed' }]);
    await sourceClient.query(
      `CREATE TABLE ${newer.schema}.tickets (id text PRIMARY KEY, state text, _raw jsonb NOT NULL, _synced_at timestamptz NOT NULL)`,
    );
    await sourceClient.query(
      `INSERT INTO ${newer.schema}.tickets VALUES ('t1', 'open', '{"id":"t1","state":"open"}', '2020-01-01T00:00:00Z')`,
    );
    await copyAccount(from, to, newer, 10);
    const [user] = await rowsOf(targetClient, newer.schema, 'users', 'user_id');
    expect(user).toMatchObject({ message_id: 'new', traits: { plan: 'pro', city: 'Oslo' } });
    const [ticket] = await rowsOf(targetClient, newer.schema, 'tickets', 'id');
    expect(ticket).toMatchObject({ id: 't1', state: 'closed', _raw: { id: 't1', state: 'closed' } });
  });

  it('carries any stream value through COPY text unchanged (generative)', async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(
          fc.record({ id: fc.string({ minLength: 1, maxLength: 12 }), v: fc.jsonValue({ maxDepth: 2 }) }),
          { selector: (r) => r.id, minLength: 1, maxLength: 8 },
        ),
        async (records) => {
          run += 1;
          const place = { accountId: `acc-gen-${run}`, schema: `account_gen_${run}` };
          // PostgreSQL text holds no NUL: what the stream writer refuses is not copied either.
          const storable = records.filter((r) => !JSON.stringify(r).includes('\\u0000'));
          if (storable.length === 0) return;
          await from.writeStream(place, 'things', 'id', storable);
          await copyAccount(from, to, place, 3);
          expect(await rowsOf(targetClient, place.schema, 'things', 'id')).toEqual(
            await rowsOf(sourceClient, place.schema, 'things', 'id'),
          );
          await from.dropAccount(place);
          await to.dropAccount(place);
        },
      ),
      { numRuns: 15 },
    );
  });

  it('gives the same day digests for the same keys in any order and split, another for other keys (generative)', async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(
          fc.string({ minLength: 1, maxLength: 10 }).filter((k) => !k.includes('\u0000')),
          {
            minLength: 2,
            maxLength: 12,
          },
        ),
        fc.integer({ min: 1, max: 5 }),
        async (keys, split) => {
          run += 1;
          const place = { accountId: `acc-days-${run}`, schema: `account_days_${run}` };
          const records = keys.map((id) => ({ id }));
          // The same keys: in order on the source, reversed and in `split` calls on the target.
          await from.writeStream(place, 'things', 'id', records);
          const reversed = [...records].reverse();
          for (let i = 0; i < reversed.length; i += split)
            await to.writeStream(place, 'things', 'id', reversed.slice(i, i + split));
          const days = await from.tableDays(place, 'things');
          expect(days).toHaveLength(1);
          expect(days[0]?.rows).toBe(keys.length);
          expect(await to.tableDays(place, 'things')).toEqual(days);
          // One key fewer on the target: its count and its hash differ.
          await targetClient.query(`DELETE FROM ${place.schema}.things WHERE id = $1`, [keys[0]]);
          const fewer = await to.tableDays(place, 'things');
          expect(fewer[0]?.rows).toBe(keys.length - 1);
          expect(fewer[0]?.hash).not.toBe(days[0]?.hash);
          expect(new Set(await to.tableKeysOn(place, 'things', days[0]?.day ?? ''))).toEqual(
            new Set(keys.slice(1)),
          );
          await from.dropAccount(place);
          await to.dropAccount(place);
        },
      ),
      { numRuns: 12 },
    );
  });

  it('drops an account schema, and a later write creates it again', async () => {
    const gone = { accountId: 'acc-gone', schema: 'account_gone' };
    await from.writeRows(gone, [row({ type: 'track', messageId: 'x1', event: 'E' }, new Date())]);
    await from.dropAccount(gone);
    const { rows } = await sourceClient.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [gone.schema]);
    expect(rows).toEqual([]);
    expect(await from.accountTables(gone)).toEqual([]);
    expect(await from.exportTable(gone, 'events', { batchRows: 10 })).toBeNull();
    await from.writeRows(gone, [row({ type: 'track', messageId: 'x2', event: 'E' }, new Date())]);
    expect(await from.tableKeysOn(gone, 'events', new Date().toISOString().slice(0, 10))).toEqual(['x2']);
  });

  it('refuses a shape whose names or types are not plain', () => {
    const base = {
      table: 'things',
      kind: 'stream' as const,
      key: ['id'],
      columns: [{ name: 'id', type: 'text' }],
    };
    expect(() => checkedShape({ ...base, table: 'x"; DROP' })).toThrow('invalid table name');
    expect(() =>
      checkedShape({ ...base, columns: [{ name: 'id', type: 'text); DROP TABLE x; --' }] }),
    ).toThrow('invalid column type');
    expect(() => checkedShape({ ...base, key: [] })).toThrow('no primary key');
    expect(() => checkedShape({ ...base, table: 'events' })).toThrow('cannot be of kind');
    expect(mergeStatement('s', { ...base, columns: [{ name: 'id', type: 'text' }] })).toContain('DO NOTHING');
  });
});
