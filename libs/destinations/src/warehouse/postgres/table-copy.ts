import { eventOrderSql } from '../event-order';
import { conflictKey, quoteIdent } from './warehouse-ddl';
import type { TableShape, WarehouseTableName } from '../warehouse-engine';
import { isPlainIdentifier } from '../stream-table-columns';
import { orderedMerge } from './warehouse-statements';

// The SQL a move between warehouses sends to copy and compare an account's tables: pure, so
// that what it names (schema, table, columns, types) is checked without a database. A table's
// shape may come from a customer's server: names reach SQL only when plain and quoted, types
// only when they read as a type name.

export const warehouseTableNames: readonly WarehouseTableName[] = ['events', 'users', 'groups', 'aliases'];

/** A type as format_type() writes it: words, an optional (precision[,scale]), optional []. */
const typeName = /^[a-z][a-z ]{0,62}(\(\d{1,4}(,\d{1,4})?\))?(\[\])?$/;

/** The shape, or an Error naming what in it cannot be turned into SQL. */
export function checkedShape(shape: TableShape): TableShape {
  if (!isPlainIdentifier(shape.table)) throw new Error(`invalid table name ${shape.table}`);
  const warehouseTable = (warehouseTableNames as readonly string[]).includes(shape.table);
  if (warehouseTable !== (shape.kind !== 'stream') || (warehouseTable && shape.kind !== shape.table))
    throw new Error(`table ${shape.table} cannot be of kind ${shape.kind}`);
  if (shape.columns.length === 0) throw new Error(`table ${shape.table} has no columns`);
  for (const column of shape.columns) {
    if (!isPlainIdentifier(column.name)) throw new Error(`invalid column name ${column.name}`);
    if (!typeName.test(column.type)) throw new Error(`invalid column type ${column.type}`);
  }
  const names = new Set(shape.columns.map((c) => c.name));
  if (shape.key.length === 0) throw new Error(`table ${shape.table} has no primary key`);
  for (const key of shape.key)
    if (!names.has(key)) throw new Error(`key ${key} is not a column of ${shape.table}`);
  if (shape.kind !== 'stream' && shape.key.join() !== conflictKey[shape.kind])
    throw new Error(`table ${shape.table} must be keyed by ${conflictKey[shape.kind]}`);
  return shape;
}

const columnList = (shape: TableShape) => shape.columns.map((c) => quoteIdent(c.name)).join(', ');

/** `COPY (SELECT columns) TO STDOUT`: the rows in PostgreSQL's COPY text. */
export function exportStatement(schema: string, shape: TableShape): string {
  return `COPY (SELECT ${columnList(shape)} FROM ${quoteIdent(schema)}.${quoteIdent(shape.table)}) TO STDOUT`;
}

/** A stream table as the source had it (types as there); columns it lacks are added after. */
export function createStreamTableStatements(schema: string, shape: TableShape): string[] {
  const target = `${quoteIdent(schema)}.${quoteIdent(shape.table)}`;
  const columns = shape.columns.map((c) => `${quoteIdent(c.name)} ${c.type}`);
  return [
    `CREATE TABLE IF NOT EXISTS ${target} (${columns.join(', ')}, PRIMARY KEY (${shape.key.map(quoteIdent).join(', ')}))`,
    `ALTER TABLE ${target} ${shape.columns.map((c) => `ADD COLUMN IF NOT EXISTS ${quoteIdent(c.name)} ${c.type}`).join(', ')}`,
  ];
}

/** The staging table of one import: the target's columns, dropped with its transaction. */
export const stageTable = 'move_stage';

export function stageStatement(schema: string, shape: TableShape): string {
  return `CREATE TEMP TABLE ${stageTable} (LIKE ${quoteIdent(schema)}.${quoteIdent(shape.table)}) ON COMMIT DROP`;
}

export function stageCopyStatement(shape: TableShape): string {
  return `COPY ${stageTable} (${columnList(shape)}) FROM STDIN`;
}

/**
 * The merge of the staged rows into the table, by the table's rules: events and aliases keep
 * the row already there; users and groups keep per column and per trait the newest event's
 * value (a row stored before orders were kept counts as its own event's order, as the loader
 * reads it); a stream table takes the row of the newer sync. Repeating it changes nothing.
 */
export function mergeStatement(schema: string, shape: TableShape): string {
  const target = `${quoteIdent(schema)}.${quoteIdent(shape.table)}`;
  const names = shape.columns.map((c) => c.name);
  const list = columnList(shape);
  const key = shape.key.map(quoteIdent).join(', ');
  const select = names
    .map((name) =>
      name === '_event_order' && (shape.kind === 'users' || shape.kind === 'groups')
        ? `COALESCE(s._event_order, ${eventOrderSql('s')})`
        : `s.${quoteIdent(name)}`,
    )
    .join(', ');
  let onConflict: string;
  if (shape.kind === 'events' || shape.kind === 'aliases') onConflict = 'DO NOTHING';
  else if (shape.kind === 'users' || shape.kind === 'groups')
    onConflict = orderedMerge('stored', names, conflictKey[shape.kind]);
  else {
    const rest = names.filter((n) => !shape.key.includes(n));
    onConflict =
      rest.length === 0
        ? 'DO NOTHING'
        : `DO UPDATE SET ${rest.map((n) => `${quoteIdent(n)} = EXCLUDED.${quoteIdent(n)}`).join(', ')}` +
          (names.includes('_synced_at')
            ? ' WHERE stored._synced_at IS NULL OR EXCLUDED._synced_at > stored._synced_at'
            : '');
  }
  return `INSERT INTO ${target} AS stored (${list}) SELECT ${select} FROM ${stageTable} s ORDER BY ${shape.key.map((k) => `s.${quoteIdent(k)}`).join(', ')} ON CONFLICT (${key}) ${onConflict}`;
}

/** The column a table's rows are dated by: received_at, a stream table's _synced_at, or none. */
function dayColumn(shape: Pick<TableShape, 'columns'>): string | null {
  const names = new Set(shape.columns.map((c) => c.name));
  if (names.has('received_at')) return 'received_at';
  if (names.has('_synced_at')) return '_synced_at';
  return null;
}

/** The UTC day of a row as text, `none` without a date. */
function dayExpression(shape: Pick<TableShape, 'columns'>): string {
  const column = dayColumn(shape);
  return column
    ? `COALESCE(to_char(${quoteIdent(column)} AT TIME ZONE 'UTC', 'YYYY-MM-DD'), 'none')`
    : `'none'`;
}

/** A row's key as text; several key columns joined by the unit separator. */
function keyExpression(shape: Pick<TableShape, 'key'>): string {
  const [only, ...others] = shape.key;
  return only !== undefined && others.length === 0
    ? `${quoteIdent(only)}::text`
    : `concat_ws(E'\\x1f', ${shape.key.map((k) => `${quoteIdent(k)}::text`).join(', ')})`;
}

/**
 * Per UTC day the rows and the sum of each key's hash (the first 60 bits of its md5, summed
 * as numeric): the same keys give the same sum in any order, with nothing to overflow.
 */
export function daysStatement(schema: string, shape: TableShape): string {
  return `SELECT ${dayExpression(shape)} AS day, count(*) AS rows,
                 COALESCE(sum(('x' || substr(md5(${keyExpression(shape)}), 1, 15))::bit(60)::bigint::numeric), 0)::text AS hash
            FROM ${quoteIdent(schema)}.${quoteIdent(shape.table)} GROUP BY 1 ORDER BY 1`;
}

/** The keys of one day's rows ($1 the day as daysStatement writes it). */
export function keysOnStatement(schema: string, shape: TableShape): string {
  return `SELECT ${keyExpression(shape)} AS key FROM ${quoteIdent(schema)}.${quoteIdent(shape.table)}
           WHERE ${dayExpression(shape)} = $1 ORDER BY 1`;
}

/** Splits COPY text into its rows: one a line, a newline inside a value is written as \n. */
export function copyLines(text: string): string[] {
  return text.split('\n').filter((line, i, all) => i < all.length - 1 || line !== '');
}
