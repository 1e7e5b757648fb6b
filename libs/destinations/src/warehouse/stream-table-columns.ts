import { quoteIdent } from './postgres/warehouse-ddl';

// How a source stream's records become typed columns and upsert statements: pure, so what a
// record's fields may name (identifiers reach SQL quoted, and only when plain) and how values
// are typed are checked without a database.

export type ColumnType = 'text' | 'numeric' | 'boolean' | 'jsonb';

const identifier = /^[a-z_][a-z0-9_]{0,62}$/;

/** A plain lower-case name of at most 63 characters: the only names taken for schemas, tables and columns. */
export const isPlainIdentifier = (name: string): boolean => identifier.test(name);

/** The column type a field's first value gives it; none for null or missing. */
export function typeOf(value: unknown): ColumnType | undefined {
  if (value === null || value === undefined) return undefined;
  if (typeof value === 'boolean') return 'boolean';
  if (typeof value === 'number') return 'numeric';
  if (typeof value === 'string') return 'text';
  return 'jsonb';
}

/** A field's value as its column stores it; what does not fit stays only in `_raw`. */
export function columnValue(type: ColumnType, value: unknown): unknown {
  if (value === null || value === undefined) return null;
  switch (type) {
    case 'text':
      return typeof value === 'string' ? value : JSON.stringify(value);
    case 'numeric':
      if (typeof value === 'number') return Number.isFinite(value) ? value : null;
      return typeof value === 'string' && /^-?\d+(\.\d+)?$/.test(value) ? value : null;
    case 'boolean':
      return typeof value === 'boolean' ? value : null;
    case 'jsonb':
      return JSON.stringify(value);
  }
}

/** The column type of an existing column (information_schema's data_type). */
export const columnTypeOf = (dataType: string): ColumnType =>
  dataType === 'numeric' || dataType === 'boolean' || dataType === 'jsonb' ? dataType : 'text';

/**
 * One record per key, the last one seen winning: PostgreSQL cannot upsert a row twice in one
 * statement. Throws for a record without its key.
 */
export function uniqueByKey(
  table: string,
  primaryKey: string,
  records: readonly Record<string, unknown>[],
): Record<string, unknown>[] {
  const byKey = new Map<string, Record<string, unknown>>();
  for (const record of records) {
    const key = record[primaryKey];
    if (key === null || key === undefined) throw new Error(`a ${table} record has no ${primaryKey}`);
    byKey.set(String(key), record);
  }
  return [...byKey.values()];
}

/**
 * The columns the records' fields want, with the type of each one's first non-null value:
 * not the key, not names that are not plain, not names starting with `_` (ours: `_raw`,
 * `_synced_at`).
 */
export function wantedColumns(
  primaryKey: string,
  records: readonly Record<string, unknown>[],
): Map<string, ColumnType> {
  const wanted = new Map<string, ColumnType>();
  for (const record of records) {
    for (const [field, value] of Object.entries(record)) {
      if (field === primaryKey || !identifier.test(field) || field.startsWith('_') || wanted.has(field))
        continue;
      const type = typeOf(value);
      if (type) wanted.set(field, type);
    }
  }
  return wanted;
}

/** Records per INSERT so that its parameters stay under PostgreSQL's limit (65535). */
export const recordsPerStatement = (columnCount: number, maxParameters = 60_000): number =>
  Math.max(1, Math.floor(maxParameters / columnCount));

/**
 * An upsert of `count` records into `schema.table` on the primary key: the key, the fields,
 * `_raw` as parameters ($1...), `_synced_at` as now().
 */
export function upsertStatement(
  schema: string,
  table: string,
  primaryKey: string,
  fields: readonly string[],
  count: number,
): string {
  const columns = [primaryKey, ...fields, '_raw'];
  const tuples = Array.from(
    { length: count },
    (_, r) => `(${columns.map((_, c) => `$${r * columns.length + c + 1}`).join(', ')}, now())`,
  );
  const assignments = [...fields, '_raw'].map((c) => `${quoteIdent(c)} = EXCLUDED.${quoteIdent(c)}`);
  return `INSERT INTO ${quoteIdent(schema)}.${quoteIdent(table)} (${columns.map(quoteIdent).join(', ')}, _synced_at) VALUES ${tuples.join(', ')} ON CONFLICT (${quoteIdent(primaryKey)}) DO UPDATE SET ${assignments.join(', ')}, _synced_at = now()`;
}

/** The parameters of one record for upsertStatement: its key as text, each field as its column stores it, the whole record as JSON. */
export function upsertValues(
  record: Record<string, unknown>,
  primaryKey: string,
  fields: readonly string[],
  types: ReadonlyMap<string, ColumnType>,
): unknown[] {
  return [
    String(record[primaryKey]),
    ...fields.map((field) => columnValue(types.get(field) ?? 'text', record[field])),
    JSON.stringify(record),
  ];
}
