import { createHash } from 'node:crypto';
import { warehouseTables, type WarehouseRow, type WarehouseTable } from '@pipeline/events';
import type { WriteOrigin, WriteResult } from '../warehouse-engine';
import { jsonColumns, rowsByTable } from '../warehouse-row-batches';
import { foldedTables, idColumn, insertColumns, keyList, quoteName, storedTableOf } from './clickhouse-ddl';
import { rowValues, utf8Text } from './clickhouse-rows';
import type { ClickHouseServer } from './clickhouse-server';

export const jsonColumnsOf = Object.fromEntries(
  (Object.keys(warehouseTables) as WarehouseTable[]).map((t) => [t, jsonColumns(warehouseTables[t])]),
) as Record<WarehouseTable, Set<string>>;

/**
 * Loads normalized rows into an account's ClickHouse database. Inserts are synchronous and
 * named by an insert_deduplication_token from the rows' Kafka origin, so a redelivered batch
 * adds nothing; rows whose event is stored already are left out before the insert.
 */
export class ClickHouseRowWriter {
  constructor(
    private readonly server: ClickHouseServer,
    private readonly rowsPerInsert: number,
  ) {}

  async write(db: string, rows: readonly WarehouseRow[], origin?: WriteOrigin): Promise<WriteResult> {
    const result: WriteResult = { written: 0, duplicates: 0 };
    const positions = new Map<object, string>();
    if (origin) rows.forEach((r, i) => positions.set(r.row, origin.positions[i] ?? String(i)));
    for (const [table, tableRows] of rowsByTable(
      rows as readonly { table: WarehouseTable; row: Record<string, unknown> }[],
    )) {
      // Serialized before anything is sent: a value JSON cannot carry fails the rows alone.
      const lines = tableRows.map((row) => ({ row, values: rowValues(table, row, jsonColumnsOf[table]) }));
      for (let i = 0; i < lines.length; i += this.rowsPerInsert) {
        const chunk = lines.slice(i, i + this.rowsPerInsert);
        const fresh = await this.unstored(db, table, chunk);
        if (fresh.length > 0) {
          const token = origin
            ? insertToken(
                origin,
                table,
                fresh.map(({ row }) => positions.get(row) ?? ''),
              )
            : undefined;
          await this.server.client.insert({
            table: `${db}.${quoteName(storedTableOf(table))}`,
            columns: insertColumns(table) as [string, ...string[]],
            values: fresh.map(({ values }) => values),
            format: 'JSONEachRow',
            clickhouse_settings: {
              ...this.server.settings,
              input_format_null_as_default: 0,
              async_insert: 0,
              ...(token ? { insert_deduplication_token: token } : {}),
            },
          });
        }
        result.written += fresh.length;
        result.duplicates += chunk.length - fresh.length;
      }
    }
    return result;
  }

  /** The rows of the chunk whose event is not stored yet, the first of each key in the chunk. */
  private async unstored(
    db: string,
    table: WarehouseTable,
    chunk: { row: Record<string, unknown>; values: Record<string, unknown> }[],
  ): Promise<{ row: Record<string, unknown>; values: Record<string, unknown> }[]> {
    const folded = foldedTables.has(table);
    const keyOf = (row: Record<string, unknown>) =>
      folded ? `${String(row[idColumn[table]])}\u0000${String(row.message_id)}` : String(row.message_id);
    const ids = [...new Set(chunk.map(({ row }) => String(row.message_id)))];
    const stored = await this.server.rows<{ k: string }>(
      folded
        ? `SELECT DISTINCT concat(${quoteName(idColumn[table])}, '\\0', message_id) AS k FROM ${quoteName(db)}.${quoteName(storedTableOf(table))} WHERE message_id IN ${keyList(ids.map(utf8Text))}`
        : `SELECT DISTINCT message_id AS k FROM ${quoteName(db)}.${quoteName(table)} WHERE message_id IN ${keyList(ids.map(utf8Text))}`,
    );
    const seen = new Set(stored.map((r) => r.k));
    const fresh: typeof chunk = [];
    for (const entry of chunk) {
      const key = utf8Text(keyOf(entry.row));
      if (seen.has(key)) continue;
      seen.add(key);
      fresh.push(entry);
    }
    return fresh;
  }
}

/**
 * The name of one insert: the rows' topic, partition and positions, and the table. The same
 * rows read again from the same place give the same name, and the server drops the insert.
 */
export function insertToken(origin: WriteOrigin, table: string, positions: readonly string[]): string {
  const hash = createHash('sha256').update(positions.join(',')).digest('hex').slice(0, 32);
  return `${origin.topic}/${origin.partition}/${table}/${positions.length}/${hash}`;
}
