import { Client } from 'pg';
import { normalizeEvent, validateEvent, type WarehouseRow } from '@pipeline/events';
import { createScratchDatabase, DEFAULT_DATABASE_URL, type ScratchDatabase } from '@pipeline/postgres';
import { startPgBouncer, type PgBouncer } from '../../testing/pgbouncer';
import { mergeById } from '../warehouse-row-batches';
import { StreamTableWriter } from './stream-table-writer';
import { WarehouseWriter } from './warehouse-writer';

// PgBouncer in transaction mode gives each transaction whichever server connection is free: a
// session's temporary table, advisory lock or SET is not there in the client's next
// transaction, and a connection that sends statement_timeout at startup is refused. Two server
// connections for many clients, so that every writer's transactions hop between them.
const serverUrl = process.env.WAREHOUSE_URL || process.env.DATABASE_URL || DEFAULT_DATABASE_URL;
const receipt = { receivedAt: new Date('2026-03-01T12:00:00Z'), ip: '198.51.100.1', userAgent: 'UA' };

function row(event: object): WarehouseRow {
  const result = validateEvent({ anonymousId: 'anon', ...event });
  if (!result.valid) throw new Error(JSON.stringify(result.errors));
  return normalizeEvent(result.event, receipt);
}

const time = (second: number) => new Date(Date.UTC(2026, 2, 1, 10, 0, second)).toISOString();

/** One writer's batches for one schema: events (some redelivered), identifies and groups. */
function batchesOf(writer: number, schema: string): WarehouseRow[][] {
  return Array.from({ length: 4 }, (_, b) => {
    const events = Array.from({ length: 30 }, (_, i) =>
      row({
        type: 'track',
        event: 'Viewed',
        messageId: `${schema}-w${writer}-b${b}-e${i}`,
        timestamp: time(i),
      }),
    );
    const identifies = Array.from({ length: 10 }, (_, u) =>
      row({
        type: 'identify',
        userId: `u${u}`,
        messageId: `${schema}-w${writer}-b${b}-i${u}`,
        timestamp: time(writer * 4 + b),
        traits: { [`w${writer}`]: b, last: `w${writer}-b${b}` },
      }),
    );
    const groups = Array.from({ length: 3 }, (_, g) =>
      row({
        type: 'group',
        groupId: `g${g}`,
        messageId: `${schema}-w${writer}-b${b}-g${g}`,
        timestamp: time(writer * 4 + b),
        traits: { size: writer * 10 + b },
      }),
    );
    // The batch before it again: redelivered events go the staging way and add nothing.
    const previous = b > 0 ? events.slice(0, 5) : [];
    return [...events, ...identifies, ...groups, ...previous];
  });
}

describe('warehouse writers behind PgBouncer in transaction mode (real PostgreSQL)', () => {
  let db: ScratchDatabase;
  let bouncer: PgBouncer;
  let client: Client;

  beforeAll(async () => {
    db = await createScratchDatabase(serverUrl, 'pgbouncer transaction mode');
    bouncer = await startPgBouncer({ serverUrl, poolMode: 'transaction', poolSize: 2 });
    client = new Client({ connectionString: db.url });
    await client.connect();
  });
  afterAll(async () => {
    await client?.end();
    await bouncer?.stop();
    await db?.drop();
  });

  it('several writers load into fresh schemas at once: every row is there exactly once', async () => {
    const url = bouncer.urlOf(db.url);
    const schemas = ['acct_bounced_1', 'acct_bounced_2', 'acct_bounced_3'];
    const writers = Array.from(
      { length: 4 },
      () => new WarehouseWriter(url, { poolMax: 4, rowsPerCopy: 20 }),
    );
    const streams = [new StreamTableWriter(url, { poolMax: 2 }), new StreamTableWriter(url, { poolMax: 2 })];
    const work = [
      ...writers.flatMap((writer, w) =>
        schemas.map(async (schema) => {
          for (const batch of batchesOf(w, schema)) await writer.write(schema, batch);
        }),
      ),
      // Two stream writers adding different columns to one new table of a new schema at once.
      ...streams.map(async (stream, s) => {
        for (let round = 0; round < 5; round++) {
          await stream.write('acct_bounced_1', 'contacts', 'id', [
            { id: `c${s}-${round}`, [`field_${s}_${round}`]: round },
            { id: 'shared', [`field_${s}_${round}`]: round },
          ]);
        }
      }),
    ];
    const results = await Promise.allSettled(work);
    await Promise.all([...writers, ...streams].map((w) => w.close()));
    const failures = results.flatMap((r) => (r.status === 'rejected' ? [String(r.reason)] : []));
    expect({ failures, log: failures.length > 0 ? bouncer.log() : '' }).toEqual({ failures: [], log: '' });

    for (const schema of schemas) {
      const expectedEvents = writers.length * 4 * 30;
      const events = await client.query(
        `SELECT count(*)::int AS n, count(DISTINCT message_id)::int AS ids FROM ${schema}.events`,
      );
      expect(events.rows).toEqual([{ n: expectedEvents, ids: expectedEvents }]);
      const { rows: migrations } = await client.query(`SELECT version FROM ${schema}._migrations ORDER BY 1`);
      expect(migrations).toEqual([{ version: 1 }, { version: 2 }, { version: 3 }, { version: 4 }]);

      // The same rows folded in memory: what the loads must have stored, whatever their order.
      const all = writers.flatMap((_, w) => batchesOf(w, schema).flat());
      const expectedUsers = mergeById(
        all.filter((r) => r.table === 'users').map((r) => r.row),
        'user_id',
      ).map((u) => ({ user_id: u.user_id, message_id: u.message_id, traits: u.traits }));
      const users = await client.query(
        `SELECT user_id, message_id, traits FROM ${schema}.users ORDER BY user_id`,
      );
      expect(users.rows).toEqual(
        expectedUsers.sort((a, b) => String(a.user_id).localeCompare(String(b.user_id))),
      );
      expect(users.rows[0]).toEqual({
        user_id: 'u0',
        message_id: `${schema}-w3-b3-i0`,
        traits: { w0: 3, w1: 3, w2: 3, w3: 3, last: 'w3-b3' },
      });
      const groups = await client.query(`SELECT group_id, traits FROM ${schema}.groups ORDER BY group_id`);
      expect(groups.rows).toEqual(['g0', 'g1', 'g2'].map((g) => ({ group_id: g, traits: { size: 33 } })));
    }

    const contacts = await client.query('SELECT id, _raw FROM acct_bounced_1.contacts ORDER BY id');
    expect(contacts.rows.map((r) => r.id)).toEqual([
      'c0-0',
      'c0-1',
      'c0-2',
      'c0-3',
      'c0-4',
      'c1-0',
      'c1-1',
      'c1-2',
      'c1-3',
      'c1-4',
      'shared',
    ]);
    const columns = await client.query<{ column_name: string }>(
      `SELECT column_name FROM information_schema.columns WHERE table_schema = 'acct_bounced_1' AND table_name = 'contacts' AND column_name LIKE 'field%' ORDER BY 1`,
    );
    expect(columns.rows.map((r) => r.column_name)).toEqual([
      'field_0_0',
      'field_0_1',
      'field_0_2',
      'field_0_3',
      'field_0_4',
      'field_1_0',
      'field_1_1',
      'field_1_2',
      'field_1_3',
      'field_1_4',
    ]);

    // Nothing outlives a transaction on the server connections the writers shared.
    const leftovers = await client.query(
      // This test's database only: the server is shared with suites running at the same time.
      `SELECT (SELECT count(*)::int FROM pg_locks WHERE locktype = 'advisory'
                 AND database = (SELECT oid FROM pg_database WHERE datname = current_database())) AS locks,
              (SELECT count(*)::int FROM pg_class WHERE relpersistence = 't' AND relname LIKE 'stage\\_%') AS staging`,
    );
    expect(leftovers.rows).toEqual([{ locks: 0, staging: 0 }]);
  });

  it('a migration waiting for the schema’s lock gives up after lock_timeout, through PgBouncer', async () => {
    const holder = new Client({ connectionString: db.url });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT pg_advisory_xact_lock(hashtext($1))', ['warehouse:acct_bounced_locked']);
      const writer = new WarehouseWriter(bouncer.urlOf(db.url), {
        timeouts: { statementTimeoutMs: 10_000, lockTimeoutMs: 300 },
      });
      const started = Date.now();
      await expect(writer.ensureSchema('acct_bounced_locked')).rejects.toMatchObject({ code: '55P03' });
      expect(Date.now() - started).toBeLessThan(5_000);
      await writer.close();
      await holder.query('ROLLBACK');
      const schema = await client.query("SELECT 1 FROM pg_namespace WHERE nspname = 'acct_bounced_locked'");
      expect(schema.rows).toEqual([]);
    } finally {
      await holder.end();
    }
  });

  it('the time limits bound a COPY and an upsert too, set per transaction through PgBouncer', async () => {
    const url = bouncer.urlOf(db.url);
    const writer = new WarehouseWriter(url, { timeouts: { statementTimeoutMs: 300, lockTimeoutMs: 60_000 } });
    await writer.ensureSchema('acct_bounced_limits');
    const holder = new Client({ connectionString: db.url });
    await holder.connect();
    try {
      await holder.query('BEGIN');
      await holder.query(
        'LOCK TABLE acct_bounced_limits.events, acct_bounced_limits.users IN ACCESS EXCLUSIVE MODE',
      );
      const track = row({ type: 'track', event: 'Waited', messageId: 'limits-1', timestamp: time(1) });
      const user = row({ type: 'identify', userId: 'u', messageId: 'limits-2', timestamp: time(1) });
      for (const batch of [[track], [user]]) {
        const started = Date.now();
        // 57014: cancelled by statement_timeout, long before lock_timeout's minute.
        await expect(writer.write('acct_bounced_limits', batch)).rejects.toMatchObject({ code: '57014' });
        expect(Date.now() - started).toBeLessThan(5_000);
      }
      await holder.query('ROLLBACK');
      // Nothing of the cancelled transactions stayed behind: the next loads go through.
      expect(await writer.write('acct_bounced_limits', [track, user])).toEqual({ written: 2, duplicates: 0 });
    } finally {
      await holder.end();
      await writer.close();
    }
  });
});
