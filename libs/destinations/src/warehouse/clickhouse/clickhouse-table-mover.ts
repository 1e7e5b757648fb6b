import type { WarehouseTable } from '@pipeline/events';
import type { RowBatch, TableDay, TableExport, TableShape } from '../warehouse-engine';
import { isPlainIdentifier } from '../stream-table-columns';
import { foldedTables, idColumn, keyList, quoteName, storedTableOf } from './clickhouse-ddl';
import { jsonColumnsOf } from './clickhouse-row-writer';
import { tableNames, type ClickHouseServer } from './clickhouse-server';
import type { ClickHouseStreamWriter } from './clickhouse-stream-writer';
import {
  canonicalJson,
  checkStreamShape,
  clickhouseValue,
  daysQuery,
  exportExpression,
  fieldsByName,
  keyColumnOf,
  keysOnQuery,
  readFrom,
  streamKey,
  streamShape,
  warehouseRowValues,
  warehouseShape,
} from './clickhouse-table-copy';
import { copyLine, parseCopyText } from '../copy-fields';

/**
 * What a move between warehouses does on a ClickHouse warehouse: exports a table's rows as COPY
 * text, imports such rows (adding only what is not stored as it is), and reads the day hashes
 * and keys that compare the two sides.
 */
export class ClickHouseTableMover {
  constructor(
    private readonly server: ClickHouseServer,
    private readonly streams: ClickHouseStreamWriter,
    private readonly rowsPerInsert: number,
  ) {}

  async exportTable(db: string, table: string, options: { batchRows: number }): Promise<TableExport | null> {
    if (!isPlainIdentifier(table)) throw new Error(`invalid table name ${table}`);
    const columns = await this.server.columnsOf(db, table);
    if (columns.length === 0) return null;
    const shape = isWarehouseTable(table) ? warehouseShape(table) : streamShape(table, columns);
    return { shape, batches: this.exported(db, shape, columns, Math.max(1, Math.floor(options.batchRows))) };
  }

  async importRows(db: string, shape: TableShape, batch: RowBatch): Promise<number> {
    if (shape.kind === 'stream') {
      const key = checkStreamShape(shape);
      const types = await this.streams.prepare(db, shape, key);
      if (batch.rows === 0) return 0;
      return this.importStream(db, shape, key, types, parseCopyText(batch.text));
    }
    if (batch.rows === 0) return 0;
    const table = shape.kind;
    const rows = parseCopyText(batch.text).map((fields) =>
      warehouseRowValues(table, fieldsByName(shape, fields)),
    );
    const id = idColumn[table];
    const folded = foldedTables.has(table);
    // One row per key in the batch, the first: a batch of one export never holds two.
    const unique = firstPerKey(rows, (r) => String(r[id]));
    const ids = unique.map((r) => String(r[id]));
    const stored = await this.server.rows<Record<string, unknown>>(
      folded
        ? `SELECT * FROM ${quoteName(db)}.${quoteName(storedTableOf(table))} FINAL WHERE ${quoteName(id)} IN ${keyList(ids)}`
        : `SELECT DISTINCT message_id FROM ${quoteName(db)}.${quoteName(table)} WHERE message_id IN ${keyList(ids)}`,
    );
    let fresh: Record<string, unknown>[];
    if (folded) {
      // A user's row is stored once per (id, message id): an import of the same row again finds
      // it equal and adds nothing; a row that differs (the event written alone, without the older
      // traits the source folded in) is replaced by the newer insert of the same key.
      const json = jsonColumnsOf[table];
      const byKey = new Map(stored.map((r) => [`${String(r[id])}\u0000${String(r.message_id)}`, r]));
      fresh = unique.filter((r) => {
        const there = byKey.get(`${String(r[id])}\u0000${String(r.message_id)}`);
        return !there || !sameStoredRow(r, there, json);
      });
    } else {
      const present = new Set(stored.map((r) => String(r.message_id)));
      fresh = unique.filter((r) => !present.has(String(r.message_id)));
    }
    for (let i = 0; i < fresh.length; i += this.rowsPerInsert) {
      const chunk = fresh.slice(i, i + this.rowsPerInsert);
      await this.server.client.insert({
        table: `${quoteName(db)}.${quoteName(storedTableOf(table))}`,
        columns: Object.keys(chunk[0] as object) as [string, ...string[]],
        values: chunk,
        format: 'JSONEachRow',
        clickhouse_settings: { ...this.server.settings, input_format_null_as_default: 0, async_insert: 0 },
      });
    }
    return fresh.length;
  }

  async tableDays(db: string, table: string): Promise<TableDay[]> {
    if (!isPlainIdentifier(table)) throw new Error(`invalid table name ${table}`);
    if (!(await this.server.tableExists(db, table))) return [];
    const rows = await this.server.rows<{ day: string; rows: string; hash: string }>(daysQuery(db, table));
    return rows.map((r) => ({ day: r.day, rows: Number(r.rows), hash: r.hash }));
  }

  async tableKeysOn(db: string, table: string, day: string): Promise<string[]> {
    if (!/^(\d{4}-\d{2}-\d{2}|none)$/.test(day)) throw new Error(`invalid UTC day ${day}`);
    if (!isPlainIdentifier(table)) throw new Error(`invalid table name ${table}`);
    if (!(await this.server.tableExists(db, table))) return [];
    const rows = await this.server.rows<{ key: string }>(keysOnQuery(db, table), { day });
    return rows.map((r) => r.key);
  }

  /**
   * The table's rows as COPY text in batches of whole rows, one query per batch in key order
   * (after the last key of the batch before): no statement outlives its batch, however slowly
   * the importer takes them. Read with FINAL, users and groups from their folded views.
   */
  private async *exported(
    db: string,
    shape: TableShape,
    columns: readonly { name: string; type: string }[],
    batchRows: number,
  ): AsyncGenerator<RowBatch> {
    const types = new Map(columns.map((c) => [c.name, c.type]));
    const key = quoteName(keyColumnOf(shape.table));
    const select = shape.columns.map((c) => exportExpression(c.name, types.get(c.name))).join(', ');
    const keyAt = shape.columns.findIndex((c) => c.name === keyColumnOf(shape.table));
    let after: string | null = null;
    for (;;) {
      const rows: (string | null)[][] = await this.server.rows<(string | null)[]>(
        `SELECT ${select} FROM ${readFrom(db, shape.table)}
          WHERE {first:UInt8} = 1 OR ${key} > {after:String}
          ORDER BY ${key} LIMIT {limit:UInt64}`,
        { first: after === null ? 1 : 0, after: after ?? '', limit: batchRows },
        undefined,
        'JSONCompactEachRow',
      );
      if (rows.length === 0) return;
      yield { rows: rows.length, text: rows.map((r) => `${copyLine(r)}\n`).join('') };
      if (rows.length < batchRows) return;
      after = String((rows[rows.length - 1] as (string | null)[])[keyAt]);
    }
  }

  /** Stream rows merged by key: a row is written only when its sync is newer than the stored one. */
  private async importStream(
    db: string,
    shape: TableShape,
    key: string,
    types: ReadonlyMap<string, string>,
    rows: (string | null)[][],
  ): Promise<number> {
    const values = rows.map((fields) => {
      const byName = fieldsByName(shape, fields);
      const out: Record<string, unknown> = {};
      for (const [name, text] of byName) {
        if (name === streamKey && key !== streamKey) continue; // a field named id stays in _raw
        const column = name === key ? streamKey : name;
        const type = types.get(column);
        if (type === undefined) continue;
        out[column] = clickhouseValue(column, type, text);
      }
      return out;
    });
    const newest = new Map<string, Record<string, unknown>>();
    for (const row of values) {
      const id = String(row[streamKey]);
      const there = newest.get(id);
      if (!there || String(row._synced_at) > String(there._synced_at)) newest.set(id, row);
    }
    const stored = await this.server.rows<{ id: string; at: string }>(
      `SELECT id, toString(max(_synced_at)) AS at FROM ${quoteName(db)}.${quoteName(shape.table)}
        WHERE id IN ${keyList([...newest.keys()])} GROUP BY id`,
    );
    const storedAt = new Map(stored.map((r) => [r.id, r.at]));
    const fresh = [...newest.values()].filter((r) => {
      const at = storedAt.get(String(r[streamKey]));
      return at === undefined || String(r._synced_at) > at;
    });
    for (let i = 0; i < fresh.length; i += this.rowsPerInsert) {
      const chunk = fresh.slice(i, i + this.rowsPerInsert);
      await this.server.client.insert({
        table: `${quoteName(db)}.${quoteName(shape.table)}`,
        columns: Object.keys(chunk[0] as object) as [string, ...string[]],
        values: chunk,
        format: 'JSONEachRow',
        clickhouse_settings: { ...this.server.settings, input_format_null_as_default: 0, async_insert: 0 },
      });
    }
    return fresh.length;
  }
}

const isWarehouseTable = (table: string): table is WarehouseTable =>
  (tableNames as readonly string[]).includes(table);

function firstPerKey<T>(rows: readonly T[], keyOf: (row: T) => string): T[] {
  const seen = new Map<string, T>();
  for (const row of rows) if (!seen.has(keyOf(row))) seen.set(keyOf(row), row);
  return [...seen.values()];
}

/**
 * Whether a row to import equals the stored one of the same key: every column the import
 * writes, JSON compared by value (the engines spell it differently), the rest by its text.
 */
function sameStoredRow(
  row: Readonly<Record<string, unknown>>,
  stored: Readonly<Record<string, unknown>>,
  json: ReadonlySet<string>,
): boolean {
  return Object.keys(row).every((column) => {
    const a = row[column];
    const b = stored[column];
    if (a === null || a === undefined || b === null || b === undefined) return (a ?? null) === (b ?? null);
    if (json.has(column) || column === '_trait_orders')
      return canonicalJson(String(a)) === canonicalJson(String(b));
    return String(a) === String(b);
  });
}
