import { quoteIdent } from './warehouse-ddl';

// The SQL text the warehouse writer sends: pure, so that what it names (schema, table, columns,
// conflict key) is checked without a database. Schema and column names reach SQL only quoted.

/** An account's schema name (warehouseSchemaFor): anything else is refused before any SQL. */
const schemaName = /^[a-z_][a-z0-9_]{0,62}$/;

export const isWarehouseSchemaName = (schema: string): boolean => schemaName.test(schema);

/** The column types of each warehouse table, in column order (warehouseTables' shape). */
export type TableColumns = Readonly<Record<string, Readonly<Record<string, string>>>>;

/** `COPY target (columns) FROM STDIN`. */
export const copyStatement = (target: string, columns: readonly string[]): string =>
  `COPY ${target} (${columns.map(quoteIdent).join(', ')}) FROM STDIN`;

/** The connection's staging table of a warehouse table. */
export const stagingName = (table: string): string => `pg_temp.${quoteIdent(`stage_${table}`)}`;

/**
 * A staging table per warehouse table, private to the connection (temporary: no WAL, no other
 * session sees it) and emptied at each commit. Its columns have the types of the warehouse's
 * but no constraints, so a value PostgreSQL refuses as data fails the COPY with the same
 * SQLSTATE as an INSERT would, and a missing key fails the INSERT that follows.
 */
export function stagingTablesStatement(tables: TableColumns): string {
  return Object.entries(tables)
    .map(([table, types]) => {
      const columns = Object.entries(types).map(([c, type]) => `${quoteIdent(c)} ${type}`);
      return `CREATE TEMPORARY TABLE IF NOT EXISTS ${quoteIdent(`stage_${table}`)} (${columns.join(', ')}) ON COMMIT DELETE ROWS;`;
    })
    .join('\n');
}

/**
 * The INSERT from a staging table into the account's table. Events and aliases (keyed by
 * message_id) keep the row already there; users and groups take the latest values with their
 * traits merged, and a row whose message_id did not change is not rewritten (so it counts as a
 * duplicate).
 */
export function upsertFromStaging(
  schema: string,
  table: string,
  columns: readonly string[],
  key: string,
): string {
  const target = `${quoteIdent(schema)}.${quoteIdent(table)}`;
  let onConflict = 'DO NOTHING';
  if (key !== 'message_id') {
    const assignments = columns
      .filter((c) => c !== key)
      .map((c) =>
        c === 'traits'
          ? `traits = COALESCE(${target}.traits, '{}'::jsonb) || EXCLUDED.traits`
          : `${quoteIdent(c)} = EXCLUDED.${quoteIdent(c)}`,
      );
    onConflict = `DO UPDATE SET ${assignments.join(', ')} WHERE ${target}.message_id IS DISTINCT FROM EXCLUDED.message_id`;
  }
  const list = columns.map(quoteIdent).join(', ');
  // In key order, so that two batches loaded at once (WAREHOUSE_PARTITIONS_CONCURRENTLY) take
  // their row locks in the same order and wait for each other instead of deadlocking.
  return `INSERT INTO ${target} (${list}) SELECT ${list} FROM ${stagingName(table)} ORDER BY ${quoteIdent(key)} ON CONFLICT (${quoteIdent(key)}) ${onConflict}`;
}
