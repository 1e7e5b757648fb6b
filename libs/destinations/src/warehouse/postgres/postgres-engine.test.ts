import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { Client } from 'pg';
import { normalizeEvent, validateEvent, type WarehouseRow } from '@pipeline/events';
import { createScratchDatabase, DEFAULT_DATABASE_URL, type ScratchDatabase } from '@pipeline/postgres';
import { warehouseConnectionOf as connectionOf } from '../../testing/warehouse-connection';
import { PostgresEngine, type PostgresEngineOptions } from './postgres-engine';
import type { AccountLocation, ChangedRow, ReadPurpose } from '../warehouse-engine';
import { defaultWarehouseTimeouts } from '../warehouse-pool';

const baseUrl = process.env.DATABASE_URL || DEFAULT_DATABASE_URL;

const options = (extra: Partial<PostgresEngineOptions> = {}): PostgresEngineOptions => ({
  timeouts: defaultWarehouseTimeouts,
  poolMax: 4,
  idleTimeoutMs: 10_000,
  ...extra,
});

const receipt = { receivedAt: new Date('2026-03-01T12:00:00Z'), ip: '198.51.100.1', userAgent: 'UA' };
function row(event: object, receivedAt = receipt.receivedAt): WarehouseRow {
  const result = validateEvent({ anonymousId: 'a1', ...event });
  if (!result.valid) throw new Error(JSON.stringify(result.errors));
  return normalizeEvent(result.event, { ...receipt, receivedAt });
}

async function collect(changes: AsyncIterable<ChangedRow[]> | null): Promise<ChangedRow[][]> {
  if (!changes) throw new Error('no changes');
  const batches: ChangedRow[][] = [];
  for await (const batch of changes) batches.push(batch);
  return batches;
}

describe('PostgresEngine (real PostgreSQL)', () => {
  let db: ScratchDatabase;
  let client: Client;
  let engine: PostgresEngine;
  const metered: { accountId: string; purpose: ReadPurpose; bytes: number }[] = [];
  const account: AccountLocation = { accountId: 'acc-1', schema: 'account_engine' };
  const empty: AccountLocation = { accountId: 'acc-2', schema: 'account_empty' };

  beforeAll(async () => {
    db = await createScratchDatabase(baseUrl, 'postgres engine');
    client = new Client({ connectionString: db.url });
    await client.connect();
    engine = new PostgresEngine(connectionOf(db.url, 'w1'), {
      ...options(),
      meter: async (accountId, purpose, bytes) => {
        metered.push({ accountId, purpose, bytes });
      },
    });
    await engine.ensureAccount(account);
    const written = await engine.writeRows(account, [
      row({
        type: 'track',
        messageId: 'e1',
        event: 'Order Completed',
        timestamp: '2026-02-27T10:00:00Z',
        properties: { total: 12.5, sku: 'a' },
      }),
      row({
        type: 'track',
        messageId: 'e2',
        event: 'Order Completed',
        timestamp: '2026-02-28T10:00:00Z',
        properties: { total: '12', sku: 'b' },
      }),
      row(
        { type: 'page', messageId: 'e3', name: 'Home', timestamp: '2026-02-28T11:00:00Z' },
        new Date('2026-03-01T12:00:01Z'),
      ),
      row(
        { type: 'track', messageId: 'e0', event: 'Old', timestamp: '2026-01-01T00:00:00Z' },
        new Date('2026-02-28T12:00:00Z'),
      ),
      row({
        type: 'identify',
        messageId: 'u1',
        timestamp: '2026-03-01T11:00:00Z',
        userId: 'user-1',
        traits: { plan: 'pro' },
      }),
      row(
        {
          type: 'identify',
          messageId: 'u2',
          timestamp: '2026-03-01T11:00:00Z',
          userId: 'user-2',
          traits: { plan: 'free' },
        },
        new Date('2026-03-01T12:00:02Z'),
      ),
    ]);
    expect(written).toEqual({ written: 6, duplicates: 0 });
  });
  afterAll(async () => {
    await engine.close();
    await client.end();
    await db.drop();
  });

  it('lists the tables that exist and whether any has a row', async () => {
    const q = { purpose: 'query' } as const;
    expect(await engine.query(account, 'existing_tables', {}, q)).toEqual([
      { table: 'events' },
      { table: 'users' },
      { table: 'groups' },
      { table: 'aliases' },
    ]);
    expect(await engine.query(account, 'has_rows', {}, q)).toEqual([{ found: true }]);
    expect(await engine.query(empty, 'existing_tables', {}, q)).toEqual([]);
    expect(await engine.query(empty, 'has_rows', {}, q)).toEqual([{ found: false }]);
    await engine.ensureAccount(empty);
    expect(await engine.query(empty, 'has_rows', {}, q)).toEqual([{ found: false }]);
  });

  it('answers the tracking plan queries over the window', async () => {
    const since = new Date('2026-02-01T00:00:00Z');
    expect(await engine.query(account, 'event_names', { since }, { purpose: 'model_query' })).toEqual([
      {
        type: 'track',
        name: 'Order Completed',
        count: 2,
        firstSeen: new Date('2026-02-27T10:00:00Z'),
        lastSeen: new Date('2026-02-28T10:00:00Z'),
      },
      {
        type: 'page',
        name: 'Home',
        count: 1,
        firstSeen: new Date('2026-02-28T11:00:00Z'),
        lastSeen: new Date('2026-02-28T11:00:00Z'),
      },
    ]);
    expect(
      await engine.query(account, 'event_property_types', { since }, { purpose: 'model_query' }),
    ).toEqual([
      { type: 'track', event: 'Order Completed', property: 'sku', jsonType: 'string', count: 2 },
      { type: 'track', event: 'Order Completed', property: 'total', jsonType: 'number', count: 1 },
      { type: 'track', event: 'Order Completed', property: 'total', jsonType: 'string', count: 1 },
    ]);
  });

  it('measures a table and counts the rows received on a UTC day', async () => {
    expect(
      await engine.query(
        account,
        'table_freshness',
        { table: 'events', now: new Date('2026-03-02T06:00:00Z') },
        { purpose: 'model_query' },
      ),
    ).toEqual([
      {
        rows: 4,
        lastReceivedAt: new Date('2026-03-01T12:00:01Z'),
        lastEventAt: new Date('2026-02-28T11:00:00Z'),
        rowsLast24h: 3,
      },
    ]);
    const q = { purpose: 'query' } as const;
    expect(await engine.query(account, 'rows_received_on', { day: '2026-03-01' }, q)).toEqual([{ rows: 5 }]);
    expect(await engine.query(account, 'rows_received_on', { day: '2026-02-28' }, q)).toEqual([{ rows: 1 }]);
    expect(await engine.query(empty, 'rows_received_on', { day: '2026-03-01' }, q)).toEqual([{ rows: 0 }]);
    await expect(engine.query(account, 'rows_received_on', { day: "1' OR 1=1" }, q)).rejects.toThrow(
      "invalid UTC day 1' OR 1=1",
    );
    await expect(
      engine.query(account, 'table_freshness', { table: 'pg_user' as 'events', now: new Date() }, q),
    ).rejects.toThrow('unknown warehouse table pg_user');
  });

  it('meters the bytes a read fetched from the account schema, in whole blocks, for its purpose', async () => {
    metered.length = 0;
    await engine.query(account, 'event_names', { since: new Date(0) }, { purpose: 'model_query' });
    await engine.query(account, 'has_rows', {}, { purpose: 'query' });
    expect(metered.map((m) => [m.accountId, m.purpose])).toEqual([
      ['acc-1', 'model_query'],
      ['acc-1', 'query'],
    ]);
    for (const { bytes } of metered) {
      expect(bytes).toBeGreaterThanOrEqual(8192);
      expect(bytes % 8192).toBe(0);
    }
    const storage = await engine.storageBytes(account);
    expect(storage).toBeGreaterThanOrEqual(8 * 8192);
    expect(await engine.storageBytes({ accountId: 'x', schema: 'account_none' })).toBe(0);
  });

  it('reads users and events after a watermark in batches, in (time, key) order', async () => {
    const users = await collect(
      await engine.readChanges(
        account,
        { kind: 'users', since: { at: '1970-01-01T00:00:00.000000Z', key: '' } },
        { purpose: 'query', batchRows: 1 },
      ),
    );
    expect(users.map((batch) => batch.map((c) => [c.at, c.key]))).toEqual([
      [['2026-03-01T12:00:00.000000Z', 'user-1']],
      [['2026-03-01T12:00:02.000000Z', 'user-2']],
    ]);
    expect(users[0]?.[0]?.row).toEqual({ user_id: 'user-1', anonymous_id: 'a1', traits: { plan: 'pro' } });

    const events = await collect(
      await engine.readChanges(
        account,
        {
          kind: 'events',
          since: { at: '2026-03-01T12:00:00.000000Z', key: 'e1' },
          receivedSince: new Date('2026-03-01T00:00:00Z'),
          names: null,
        },
        { purpose: 'query', batchRows: 10 },
      ),
    );
    expect(events.flat().map((c) => [c.at, c.key])).toEqual([
      ['2026-03-01T12:00:00.000000Z', 'e2'],
      ['2026-03-01T12:00:01.000000Z', 'e3'],
    ]);
    expect(events[0]?.[0]?.row).toEqual({
      message_id: 'e2',
      type: 'track',
      event: 'Order Completed',
      name: null,
      properties: { total: '12', sku: 'b' },
      anonymous_id: 'a1',
      user_id: null,
      timestamp: '2026-02-28T10:00:00.000000Z',
    });
    const named = await collect(
      await engine.readChanges(
        account,
        {
          kind: 'events',
          since: { at: '1970-01-01T00:00:00.000000Z', key: '' },
          receivedSince: new Date(0),
          names: ['Home', 'Old'],
        },
        { purpose: 'query', batchRows: 10 },
      ),
    );
    expect(named.flat().map((c) => c.key)).toEqual(['e0', 'e3']);
    expect(
      await engine.readChanges(
        account,
        { kind: 'stream', table: 'stripe_customers', since: { at: '1970-01-01T00:00:00Z', key: '' } },
        { purpose: 'query', batchRows: 10 },
      ),
    ).toBeNull();
    await expect(
      engine.readChanges(
        account,
        { kind: 'stream', table: 'x"; DROP TABLE y; --', since: { at: '1970-01-01T00:00:00Z', key: '' } },
        { purpose: 'query', batchRows: 10 },
      ),
    ).rejects.toThrow('invalid stream table name');
  });

  it('gives back any stream record it stored, whole, through readChanges', async () => {
    const plain = fc.stringMatching(/^[a-z][a-z0-9_]{0,8}$/);
    const text = fc.string({ unit: 'binary' }).filter((s) => !s.includes('\u0000'));
    const value = fc.oneof(text, fc.integer(), fc.boolean(), fc.constant(null), fc.dictionary(plain, text));
    const key = fc.oneof(plain, text).filter((k) => k !== 'id' && k !== '__proto__');
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.dictionary(key, value, { maxKeys: 6 }), { minLength: 1, maxLength: 8 }),
        async (fields) => {
          run += 1;
          const table = `stream_${run}`;
          const records = fields.map((f, i) => ({ ...f, id: `r${i}` }));
          const result = await engine.writeStream(account, table, 'id', records);
          expect(result.written).toBe(records.length);
          const changes = await collect(
            await engine.readChanges(
              account,
              { kind: 'stream', table, since: { at: '1970-01-01T00:00:00Z', key: '' } },
              { purpose: 'query', batchRows: 3 },
            ),
          );
          const byKey = new Map(changes.flat().map((c) => [c.key, c.row]));
          expect(byKey).toEqual(new Map(records.map((r) => [r.id, r])));
        },
      ),
      { numRuns: 25 },
    );
  });

  it('cancels a read on the server when its signal aborts', async () => {
    const holder = new Client({ connectionString: db.url });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query(`LOCK TABLE ${account.schema}.events IN ACCESS EXCLUSIVE MODE`);
      const abort = new AbortController();
      const started = Date.now();
      const read = engine.query(
        account,
        'event_names',
        { since: new Date(0) },
        { purpose: 'query', signal: abort.signal },
      );
      // The read waits on the lock: abort once the server shows it waiting.
      for (let i = 0; i < 100; i += 1) {
        const { rows } = await client.query(
          `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND wait_event_type = 'Lock'`,
          [db.name],
        );
        if (rows[0].n > 0) break;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      abort.abort();
      await expect(read).rejects.toMatchObject({ code: '57014' });
      expect(Date.now() - started).toBeLessThan(5000);
    } finally {
      await holder.query('ROLLBACK');
      await holder.end();
    }
  });

  it('probes, and classifies what a refusing or missing warehouse answers', async () => {
    await expect(engine.probe()).resolves.toBeUndefined();

    const missing = new PostgresEngine(
      { ...connectionOf(db.url, 'w2'), database: `${db.name}_absent` },
      options(),
    );
    const missingError = await missing.probe().then(
      () => null,
      (e: unknown) => e,
    );
    expect(missingError).toMatchObject({ code: '3D000' });
    expect(missing.classifyError(missingError)).toBe('misconfigured');
    await missing.close();

    const down = new PostgresEngine({ ...connectionOf(db.url, 'w3'), host: '127.0.0.1', port: 1 }, options());
    const downError = await down.probe().then(
      () => null,
      (e: unknown) => e,
    );
    expect(down.classifyError(downError)).toBe('unavailable');
    await down.close();

    // The test server has no TLS: a warehouse that requires it cannot be reached as configured.
    const plain = new PostgresEngine({ ...connectionOf(db.url, 'w5'), tlsMode: 'require' }, options());
    const tlsError = await plain.probe().then(
      () => null,
      (e: unknown) => e,
    );
    expect(tlsError).toMatchObject({ message: 'The server does not support SSL connections' });
    expect(plain.classifyError(tlsError)).toBe('misconfigured');
    await plain.close();

    const role = `engine_${randomBytes(4).toString('hex')}`;
    await client.query(`CREATE ROLE ${role} LOGIN`);
    const stranger = new PostgresEngine({ ...connectionOf(db.url, 'w4'), user: role }, options());
    try {
      const denied = await stranger
        .query(account, 'event_names', { since: new Date(0) }, { purpose: 'query' })
        .then(
          () => null,
          (e: unknown) => e,
        );
      expect(denied).toMatchObject({ code: '42501' });
      expect(stranger.classifyError(denied)).toBe('misconfigured');
    } finally {
      await stranger.close();
      await client.query(`DROP ROLE ${role}`);
    }

    expect(
      [
        { code: '22P02' },
        { code: '57014' },
        { code: '28P01' },
        { code: '3F000' },
        new AggregateError([{ code: 'ECONNREFUSED' }, { code: 'ECONNREFUSED' }]),
        { code: '42601' },
        { code: 'ERR_TLS_CERT_ALTNAME_INVALID' },
        { code: 'DEPTH_ZERO_SELF_SIGNED_CERT' },
        null,
      ].map((e) => engine.classifyError(e)),
    ).toEqual([
      'data',
      'unavailable',
      'misconfigured',
      'misconfigured',
      'unavailable',
      'unexpected',
      'misconfigured',
      'misconfigured',
      'unexpected',
    ]);
  });
});
