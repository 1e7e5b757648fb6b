import { Client } from 'pg';
import { createScratchDatabase, DEFAULT_DATABASE_URL, type ScratchDatabase } from '@pipeline/postgres';
import { StreamTableWriter } from './stream-table-writer';

describe('StreamTableWriter (real PostgreSQL)', () => {
  let db: ScratchDatabase;
  let client: Client;
  let writer: StreamTableWriter;
  const schema = 'account_streams';
  beforeAll(async () => {
    db = await createScratchDatabase(process.env.DATABASE_URL || DEFAULT_DATABASE_URL, 'stream tables');
    client = new Client({ connectionString: db.url });
    await client.connect();
    writer = new StreamTableWriter(db.url);
  });
  afterAll(async () => {
    await writer.close();
    await client.end();
    await db.drop();
  });

  it('creates typed columns from the records, keeps the whole record, and upserts on the key', async () => {
    const first = await writer.write(schema, 'stripe_customers', 'id', [
      {
        id: 'cus_1',
        email: 'a@example.com',
        balance: 0,
        delinquent: false,
        metadata: { tier: 'gold' },
        phone: null,
      },
      { id: 'cus_2', email: 'b@example.com', balance: 1250.5, delinquent: true, metadata: {} },
    ]);
    expect(first).toEqual({ written: 2, addedColumns: ['email', 'balance', 'delinquent', 'metadata'] });
    const columns = await client.query(
      `SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'stripe_customers' ORDER BY ordinal_position`,
      [schema],
    );
    expect(columns.rows.map((r) => `${r.column_name}:${r.data_type}`)).toEqual([
      'id:text',
      '_raw:jsonb',
      '_synced_at:timestamp with time zone',
      'email:text',
      'balance:numeric',
      'delinquent:boolean',
      'metadata:jsonb',
    ]);

    // A re-run with a changed record and a new field: updated in place, a column added, no duplicate.
    const second = await writer.write(schema, 'stripe_customers', 'id', [
      {
        id: 'cus_1',
        email: 'a2@example.com',
        balance: 10,
        delinquent: false,
        metadata: {},
        phone: '+4912345',
      },
      {
        id: 'cus_1',
        email: 'a3@example.com',
        balance: 11,
        delinquent: false,
        metadata: {},
        phone: '+4912345',
      },
    ]);
    expect(second).toEqual({ written: 1, addedColumns: ['phone'] });
    const rows = await client.query(
      `SELECT id, email, balance::text, phone, _raw FROM ${schema}.stripe_customers ORDER BY id`,
    );
    expect(rows.rows).toEqual([
      {
        id: 'cus_1',
        email: 'a3@example.com',
        balance: '11',
        phone: '+4912345',
        _raw: {
          id: 'cus_1',
          email: 'a3@example.com',
          balance: 11,
          delinquent: false,
          metadata: {},
          phone: '+4912345',
        },
      },
      expect.objectContaining({ id: 'cus_2', email: 'b@example.com', balance: '1250.5', phone: null }),
    ]);
  });

  it('keeps a value that does not fit its column only in _raw, and loads large batches across statements', async () => {
    await writer.write(schema, 'shopify_orders', 'id', [{ id: 1, total: 10, closed: false }]);
    await writer.write(schema, 'shopify_orders', 'id', [{ id: 2, total: 'n/a', closed: 'yes' }]);
    const odd = await client.query(`SELECT total, closed, _raw FROM ${schema}.shopify_orders WHERE id = '2'`);
    expect(odd.rows[0]).toEqual({ total: null, closed: null, _raw: { id: 2, total: 'n/a', closed: 'yes' } });

    const many = Array.from({ length: 25_000 }, (_, i) => ({ id: `ord_${i}`, a: i, b: `x${i}`, c: true }));
    expect((await writer.write(schema, 'bulk', 'id', many)).written).toBe(25_000);
    expect((await writer.write(schema, 'bulk', 'id', many)).written).toBe(25_000); // upserted again, not added
    expect((await client.query(`SELECT count(*)::int AS n FROM ${schema}.bulk`)).rows[0].n).toBe(25_000);
  });

  it('refuses identifiers that are not plain names and records without their key', async () => {
    await expect(writer.write('bad schema', 't', 'id', [])).rejects.toThrow(/invalid warehouse identifier/);
    await expect(writer.write(schema, 't"; drop', 'id', [])).rejects.toThrow(/invalid warehouse identifier/);
    await expect(writer.write(schema, 'nokey', 'id', [{ name: 'x' }])).rejects.toThrow(/has no id/);
  });
});
