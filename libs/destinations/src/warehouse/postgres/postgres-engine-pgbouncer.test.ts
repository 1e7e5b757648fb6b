import { Client } from 'pg';
import { normalizeEvent, validateEvent, type WarehouseRow } from '@pipeline/events';
import { createScratchDatabase, DEFAULT_DATABASE_URL, type ScratchDatabase } from '@pipeline/postgres';
import { startPgBouncer, type PgBouncer } from '../../testing/pgbouncer';
import { warehouseConnectionOf } from '../../testing/warehouse-connection';
import { PostgresEngine } from './postgres-engine';
import type { AccountLocation, ChangedRow, ReadPurpose } from '../warehouse-engine';

// The engine behind PgBouncer in transaction mode, two server connections for its pool of
// four: its connections send no time limits at startup (PgBouncer would refuse them), each read
// sets them for its own transaction, and a read's metering and a change cursor stay within one
// transaction, so they never straddle two server connections.
const serverUrl = process.env.WAREHOUSE_URL || process.env.DATABASE_URL || DEFAULT_DATABASE_URL;
const receipt = { receivedAt: new Date('2026-03-01T12:00:00Z'), ip: '198.51.100.1', userAgent: 'UA' };

function track(messageId: string, second: number): WarehouseRow {
  const result = validateEvent({
    type: 'track',
    event: 'Viewed',
    anonymousId: 'anon',
    messageId,
    timestamp: new Date(Date.UTC(2026, 2, 1, 10, 0, second)).toISOString(),
    properties: { second },
  });
  if (!result.valid) throw new Error(JSON.stringify(result.errors));
  return normalizeEvent(result.event, {
    ...receipt,
    receivedAt: new Date(Date.UTC(2026, 2, 1, 12, 0, second)),
  });
}

describe('PostgresEngine behind PgBouncer in transaction mode (real PostgreSQL)', () => {
  let db: ScratchDatabase;
  let bouncer: PgBouncer;
  let client: Client;
  let engine: PostgresEngine;
  const metered: { purpose: ReadPurpose; bytes: number }[] = [];
  const account: AccountLocation = { accountId: 'acc-b', schema: 'account_bounced' };

  beforeAll(async () => {
    db = await createScratchDatabase(serverUrl, 'engine behind pgbouncer');
    bouncer = await startPgBouncer({ serverUrl, poolMode: 'transaction', poolSize: 2 });
    client = new Client({ connectionString: db.url });
    await client.connect();
    engine = new PostgresEngine(warehouseConnectionOf(bouncer.urlOf(db.url), 'bounced'), {
      timeouts: { statementTimeoutMs: 10_000, lockTimeoutMs: 300 },
      poolMax: 4,
      idleTimeoutMs: 10_000,
      meter: async (_accountId, purpose, bytes) => {
        metered.push({ purpose, bytes });
      },
    });
  });
  afterAll(async () => {
    await engine?.close();
    await client?.end();
    await bouncer?.stop();
    await db?.drop();
  });

  it('writes, reads in parallel and meters every read', async () => {
    await engine.ensureAccount(account);
    expect(
      await engine.writeRows(
        account,
        Array.from({ length: 5 }, (_, i) => track(`m${i}`, i)),
      ),
    ).toEqual({ written: 5, duplicates: 0 });
    const reads = await Promise.all(
      Array.from({ length: 8 }, () =>
        engine.query(account, 'event_names', { since: new Date(0) }, { purpose: 'model_query' }),
      ),
    );
    for (const rows of reads)
      expect(rows).toEqual([
        {
          type: 'track',
          name: 'Viewed',
          count: 5,
          firstSeen: new Date('2026-03-01T10:00:00Z'),
          lastSeen: new Date('2026-03-01T10:00:04Z'),
        },
      ]);
    expect(metered).toHaveLength(8);
    for (const { purpose, bytes } of metered) {
      expect(purpose).toBe('model_query');
      expect(bytes).toBeGreaterThanOrEqual(8192);
    }
  });

  it('reads a change cursor batch by batch while other reads share the server connections', async () => {
    const changes = await engine.readChanges(
      account,
      {
        kind: 'events',
        since: { at: '1970-01-01T00:00:00.000000Z', key: '' },
        receivedSince: new Date(0),
        names: ['Viewed'],
      },
      { purpose: 'query', batchRows: 2 },
    );
    const batches: ChangedRow[][] = [];
    for await (const batch of changes!) {
      batches.push(batch);
      // Another transaction between two FETCHes of the cursor.
      expect(await engine.query(account, 'has_rows', {}, { purpose: 'query' })).toEqual([{ found: true }]);
    }
    expect(batches.map((batch) => batch.map((c) => c.key))).toEqual([['m0', 'm1'], ['m2', 'm3'], ['m4']]);
    expect(batches[2]?.[0]).toMatchObject({
      at: '2026-03-01T12:00:04.000000Z',
      row: { properties: { second: 4 } },
    });
  });

  it('gives up a read after the lock timeout of its own transaction', async () => {
    await client.query('BEGIN');
    await client.query(`LOCK TABLE ${account.schema}.events IN ACCESS EXCLUSIVE MODE`);
    try {
      const started = Date.now();
      const error = await engine
        .query(account, 'table_freshness', { table: 'events', now: new Date() }, { purpose: 'query' })
        .then(
          () => null,
          (e: unknown) => e,
        );
      expect(error).toMatchObject({ code: '55P03' });
      expect(engine.classifyError(error)).toBe('unavailable');
      expect(Date.now() - started).toBeLessThan(5000);
    } finally {
      await client.query('ROLLBACK');
    }
    // The lock gone, the same read goes through.
    expect(
      await engine.query(
        account,
        'table_freshness',
        { table: 'events', now: new Date() },
        { purpose: 'query' },
      ),
    ).toHaveLength(1);
  });
});
