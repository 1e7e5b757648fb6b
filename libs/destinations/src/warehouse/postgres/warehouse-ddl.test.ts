import { Client } from 'pg';
import { warehouseTables } from '@pipeline/events';
import { createScratchDatabase, DEFAULT_DATABASE_URL, type ScratchDatabase } from '@pipeline/postgres';
import { addColumns, conflictKey, orderColumns, warehouseMigrations } from './warehouse-ddl';
import { WarehouseWriter } from './warehouse-writer';
import { erasureStatement } from './subject-erasure';

describe('warehouse migrations', () => {
  // Migration 1's text, character for character, is pinned in warehouse-migrations.test.ts.
  describe('applied (real PostgreSQL)', () => {
    let db: ScratchDatabase;
    let client: Client;
    beforeAll(async () => {
      db = await createScratchDatabase(process.env.DATABASE_URL || DEFAULT_DATABASE_URL, 'warehouse ddl');
      client = new Client({ connectionString: db.url });
      await client.connect();
    });
    afterAll(async () => {
      await client.end();
      await db.drop();
    });

    const columnsOf = async (schema: string) => {
      const { rows } = await client.query<{ table_name: string; column_name: string; data_type: string }>(
        `SELECT table_name, column_name, data_type FROM information_schema.columns
          WHERE table_schema = $1 AND table_name <> '_migrations' ORDER BY table_name, ordinal_position`,
        [schema],
      );
      const tables: Record<string, Record<string, string>> = {};
      for (const row of rows) (tables[row.table_name] ??= {})[row.column_name] = row.data_type;
      return tables;
    };

    it('every migration applied to a fresh schema gives the columns and keys of the current table definitions', async () => {
      const writer = new WarehouseWriter(db.url);
      await writer.ensureSchema('acct_fresh');
      await writer.close();
      const { rows: applied } = await client.query('SELECT version FROM acct_fresh._migrations ORDER BY 1');
      expect(applied.map((r) => r.version)).toEqual(warehouseMigrations.map((m) => m.version));

      const sqlType: Record<string, string> = {
        text: 'text',
        'text COLLATE "C"': 'text',
        integer: 'integer',
        timestamptz: 'timestamp with time zone',
        jsonb: 'jsonb',
      };
      // The tables as warehouseTables describes them, and the orders of users' and groups' values.
      const orders: Partial<Record<string, Record<string, string>>> = orderColumns;
      const expected = Object.fromEntries(
        Object.entries(warehouseTables).map(([table, columns]) => [
          table,
          Object.fromEntries(
            Object.entries({ ...columns, ...orders[table] }).map(([name, type]) => [name, sqlType[type]]),
          ),
        ]),
      );
      expect(await columnsOf('acct_fresh')).toEqual(expected);

      const { rows: keys } = await client.query<{ table_name: string; column_name: string }>(
        `SELECT tc.table_name, kcu.column_name FROM information_schema.table_constraints tc
           JOIN information_schema.key_column_usage kcu USING (constraint_schema, constraint_name)
          WHERE tc.table_schema = 'acct_fresh' AND tc.constraint_type = 'PRIMARY KEY' AND tc.table_name <> '_migrations'`,
      );
      expect(Object.fromEntries(keys.map((k) => [k.table_name, k.column_name]))).toEqual(conflictKey);
    });

    it("an account created before step 3 gets the erasure's indexes, its rows kept, and its erasure uses them", async () => {
      await client.query('CREATE SCHEMA acct_v2');
      await client.query(
        'CREATE TABLE acct_v2._migrations (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())',
      );
      for (const migration of warehouseMigrations.filter((m) => m.version <= 2)) {
        for (const statement of migration.statements('acct_v2')) await client.query(statement);
        await client.query('INSERT INTO acct_v2._migrations (version) VALUES ($1)', [migration.version]);
      }
      await client.query(
        `INSERT INTO acct_v2.events (message_id, user_id, anonymous_id)
         SELECT 'm' || i, 'u' || (i % 500), 'a' || i FROM generate_series(1, 5000) i`,
      );
      const indexes = async () =>
        (
          await client.query<{ indexname: string }>(
            "SELECT indexname FROM pg_indexes WHERE schemaname = 'acct_v2' AND indexname NOT LIKE '%_pkey' ORDER BY 1",
          )
        ).rows.map((r) => r.indexname);
      expect(await indexes()).toEqual(['events_timestamp', 'events_user']);

      const writer = new WarehouseWriter(db.url);
      await writer.ensureSchema('acct_v2');
      await writer.close();
      expect(await indexes()).toEqual([
        'aliases_anonymous',
        'aliases_previous',
        'aliases_user',
        'events_anonymous',
        'events_timestamp',
        'events_user',
        'groups_anonymous',
        'groups_user',
        'users_anonymous',
      ]);
      const { rows: applied } = await client.query('SELECT version FROM acct_v2._migrations ORDER BY 1');
      expect(applied.map((r) => r.version)).toEqual([1, 2, 3, 4]);
      expect((await client.query('SELECT count(*)::int AS n FROM acct_v2.events')).rows[0].n).toBe(5000);

      // A chunk of the erasure finds its rows through the indexes, not by reading the table.
      await client.query('ANALYZE acct_v2.events');
      const { rows: plan } = await client.query<{ 'QUERY PLAN': string }>(
        `EXPLAIN ${erasureStatement('acct_v2', 'events').replace('$1::text[]', "'{u7}'::text[]").replace('$2::text[]', "'{a9}'::text[]").replace('$3', '100').replaceAll('$4', 'NULL')}`,
      );
      const text = plan.map((r) => r['QUERY PLAN']).join('\n');
      expect(text).toContain('events_user');
      expect(text).toContain('events_anonymous');
      expect(text).not.toContain('Seq Scan');
    });

    it('a later step adds columns with ALTER TABLE, harmlessly when run again', async () => {
      await client.query('CREATE SCHEMA acct_later');
      for (const statement of warehouseMigrations[0]!.statements('acct_later')) await client.query(statement);
      const step = addColumns('acct_later', 'events', [
        ['context_timezone', 'text'],
        ['revenue', 'numeric'],
      ]);
      expect(step).toBe(
        'ALTER TABLE "acct_later"."events" ADD COLUMN IF NOT EXISTS "context_timezone" text, ADD COLUMN IF NOT EXISTS "revenue" numeric',
      );
      await client.query(step);
      await client.query(step);
      const events = (await columnsOf('acct_later')).events!;
      expect(Object.entries(events).slice(-2)).toEqual([
        ['context_timezone', 'text'],
        ['revenue', 'numeric'],
      ]);
      // Step 1's columns are every column but the ones later steps add (plan_violations: step 4).
      const stepOne = Object.keys(warehouseTables.events).filter((c) => c !== 'plan_violations');
      expect(Object.keys(events)).toEqual([...stepOne, 'context_timezone', 'revenue']);
    });
  });
});
