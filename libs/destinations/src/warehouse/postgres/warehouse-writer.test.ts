import { Client } from 'pg';
import { normalizeEvent, validateEvent, type WarehouseRow } from '@pipeline/events';
import { createScratchDatabase, DEFAULT_DATABASE_URL, type ScratchDatabase } from '@pipeline/postgres';
import { WarehouseWriter } from './warehouse-writer';

const receipt = { receivedAt: new Date('2026-03-01T12:00:00Z'), ip: '198.51.100.1', userAgent: 'UA' };
function row(event: object): WarehouseRow {
  const result = validateEvent({
    messageId: `m-${Math.random()}`,
    timestamp: '2026-03-01T11:00:00Z',
    anonymousId: 'a1',
    ...event,
  });
  if (!result.valid) throw new Error(JSON.stringify(result.errors));
  return normalizeEvent(result.event, receipt);
}

describe('WarehouseWriter (real PostgreSQL)', () => {
  let db: ScratchDatabase;
  let writer: WarehouseWriter;
  let client: Client;

  beforeAll(async () => {
    db = await createScratchDatabase(process.env.DATABASE_URL || DEFAULT_DATABASE_URL, 'warehouse writer');
    writer = new WarehouseWriter(db.url);
    client = new Client({ connectionString: db.url });
    await client.connect();
  });
  afterAll(async () => {
    await client.end();
    await writer.close();
    await db.drop();
  });

  it('creates the schema with versioned migrations, once, even when asked concurrently', async () => {
    const another = new WarehouseWriter(db.url);
    await Promise.all([writer.ensureSchema('acct_a'), another.ensureSchema('acct_a')]);
    await another.close();
    const { rows } = await client.query('SELECT version FROM acct_a._migrations ORDER BY version');
    expect(rows).toEqual([{ version: 1 }, { version: 2 }, { version: 3 }, { version: 4 }]);
    const tables = await client.query(
      "SELECT table_name FROM information_schema.tables WHERE table_schema = 'acct_a' ORDER BY 1",
    );
    expect(tables.rows.map((r) => r.table_name)).toEqual([
      '_migrations',
      'aliases',
      'events',
      'groups',
      'users',
    ]);
  });

  it('loads events idempotently on messageId: redelivery adds nothing', async () => {
    const batch = [
      row({ type: 'track', event: 'Signed Up', properties: { plan: 'pro' } }),
      row({ type: 'page', name: 'Home' }),
    ];
    expect(await writer.write('acct_b', batch)).toEqual({ written: 2, duplicates: 0 });
    expect(await writer.write('acct_b', batch)).toEqual({ written: 0, duplicates: 2 });
    const { rows } = await client.query(
      'SELECT type, event, name, properties, context_ip FROM acct_b.events ORDER BY type DESC',
    );
    expect(rows).toEqual([
      {
        type: 'track',
        event: 'Signed Up',
        name: null,
        properties: { plan: 'pro' },
        context_ip: '198.51.100.1',
      },
      { type: 'page', event: null, name: 'Home', properties: {}, context_ip: '198.51.100.1' },
    ]);
  });

  it('stores only the new rows of a batch redelivered with more rows, or holding a messageId twice', async () => {
    // The first COPY into the table meets the stored rows (23505); the staging way skips them.
    const [a, b, c] = [1, 2, 3].map((n) => row({ type: 'track', event: `partial ${n}` })) as [
      WarehouseRow,
      WarehouseRow,
      WarehouseRow,
    ];
    expect(await writer.write('acct_p', [a, b])).toEqual({ written: 2, duplicates: 0 });
    expect(await writer.write('acct_p', [a, b, c])).toEqual({ written: 1, duplicates: 2 });
    const twice = row({ type: 'track', event: 'twice' });
    expect(await writer.write('acct_p', [twice, twice])).toEqual({ written: 1, duplicates: 1 });
    const { rows } = await client.query('SELECT event FROM acct_p.events ORDER BY event');
    expect(rows.map((r) => r.event)).toEqual(['partial 1', 'partial 2', 'partial 3', 'twice']);
  });

  it('upserts users on userId with traits merged, also within one batch, and is idempotent', async () => {
    const first = row({ type: 'identify', userId: 'u1', traits: { email: 'a@example.com', plan: 'free' } });
    const second = row({
      type: 'identify',
      userId: 'u1',
      timestamp: '2026-03-01T11:00:01Z',
      traits: { plan: 'pro' },
    });
    const other = row({ type: 'identify', userId: 'u2', traits: { name: 'B' } });
    await writer.write('acct_c', [first]);
    expect(await writer.write('acct_c', [second, other])).toEqual({ written: 2, duplicates: 0 });
    expect(await writer.write('acct_c', [second, other])).toEqual({ written: 0, duplicates: 2 });
    const { rows } = await client.query('SELECT user_id, traits FROM acct_c.users ORDER BY user_id');
    expect(rows).toEqual([
      { user_id: 'u1', traits: { email: 'a@example.com', plan: 'pro' } },
      { user_id: 'u2', traits: { name: 'B' } },
    ]);
    const sameBatch = [
      row({ type: 'group', groupId: 'g1', traits: { a: 1, b: 1 } }),
      row({ type: 'group', groupId: 'g1', timestamp: '2026-03-01T11:00:01Z', traits: { b: 2 } }),
    ];
    await writer.write('acct_c', sameBatch);
    expect((await client.query('SELECT traits FROM acct_c.groups')).rows).toEqual([
      { traits: { a: 1, b: 2 } },
    ]);
  });

  it('loads aliases and large batches across statements', async () => {
    const many = Array.from({ length: 1200 }, (_, i) => row({ type: 'track', event: `e${i}` }));
    expect(
      await writer.write('acct_d', [...many, row({ type: 'alias', userId: 'u', previousId: 'a1' })]),
    ).toEqual({ written: 1201, duplicates: 0 });
    expect((await client.query('SELECT count(*)::int AS n FROM acct_d.events')).rows[0].n).toBe(1200);
    expect((await client.query('SELECT previous_id FROM acct_d.aliases')).rows).toEqual([
      { previous_id: 'a1' },
    ]);
  });

  it('refuses a schema name that is not a plain identifier', async () => {
    await expect(writer.write('acct"; DROP TABLE x; --', [])).rejects.toThrow(
      /invalid warehouse schema name/,
    );
  });
});
