import type { StreamWriteResult, TableShape } from '../warehouse-engine';
import { uniqueByKey, wantedColumns, type ColumnType } from '../stream-table-columns';
import { quoteName } from './clickhouse-ddl';
import { clickhouseJsonText, receivedText, utf8Text } from './clickhouse-rows';
import type { ClickHouseServer } from './clickhouse-server';
import { streamColumnTypeOf } from './clickhouse-table-copy';

/** Stream tables: a typed column per field; numbers as Float64 (the exact record stays in `_raw`). */
const streamColumnType: Record<ColumnType, string> = {
  text: 'Nullable(String)',
  numeric: 'Nullable(Float64)',
  boolean: 'Nullable(Bool)',
  jsonb: 'Nullable(String)',
};

const columnTypeOfStored = (type: string): ColumnType =>
  type.includes('Float') ? 'numeric' : type.includes('Bool') ? 'boolean' : 'text';

function streamValue(type: ColumnType, value: unknown): unknown {
  if (value === null || value === undefined) return null;
  switch (type) {
    case 'text':
      return typeof value === 'string' ? utf8Text(value) : clickhouseJsonText(value);
    case 'numeric':
      if (typeof value === 'number') return Number.isFinite(value) ? value : null;
      return typeof value === 'string' && /^-?\d+(\.\d+)?$/.test(value) ? Number(value) : null;
    case 'boolean':
      return typeof value === 'boolean' ? value : null;
    case 'jsonb':
      return clickhouseJsonText(value);
  }
}

/**
 * Loads a source stream's records into a table of the account's database: its key as `id`, a
 * typed column per top-level field (added as fields appear), the whole record in `_raw`, and
 * `_synced_at`. A ReplacingMergeTree keeps the newest sync of each key.
 */
export class ClickHouseStreamWriter {
  /** Stream tables' columns, per `db.table`, as this process last saw them. */
  private readonly streamColumns = new Map<string, Map<string, ColumnType>>();

  constructor(
    private readonly server: ClickHouseServer,
    private readonly rowsPerInsert: number,
  ) {}

  async write(
    db: string,
    table: string,
    primaryKey: string,
    records: readonly Record<string, unknown>[],
  ): Promise<StreamWriteResult> {
    const unique = uniqueByKey(table, primaryKey, records);
    if (unique.length === 0) return { written: 0, addedColumns: [] };
    const addedColumns = await this.ensureStreamColumns(db, table, primaryKey, unique);
    const known = this.streamColumns.get(`${db}.${table}`) ?? new Map<string, ColumnType>();
    const fields = [...known.keys()];
    const syncedAt = receivedText(new Date());
    for (let i = 0; i < unique.length; i += this.rowsPerInsert) {
      await this.server.client.insert({
        table: `${db}.${quoteName(table)}`,
        values: unique.slice(i, i + this.rowsPerInsert).map((record) => ({
          id: utf8Text(String(record[primaryKey])),
          ...Object.fromEntries(fields.map((f) => [f, streamValue(known.get(f) ?? 'text', record[f])])),
          _raw: clickhouseJsonText(record),
          _synced_at: syncedAt,
        })),
        format: 'JSONEachRow',
        clickhouse_settings: { ...this.server.settings, async_insert: 0 },
      });
    }
    return { written: unique.length, addedColumns };
  }

  /** Creates the stream table when missing and adds the shape's columns it lacks; its columns' types. */
  async prepare(db: string, shape: TableShape, key: string): Promise<Map<string, string>> {
    const target = `${quoteName(db)}.${quoteName(shape.table)}`;
    await this.server.command(streamTableStatement(target));
    let types = new Map((await this.server.columnsOf(db, shape.table)).map((c) => [c.name, c.type]));
    const missing = shape.columns.filter((c) => c.name !== key && !types.has(c.name));
    if (missing.length > 0) {
      for (const column of missing)
        await this.server.command(
          `ALTER TABLE ${target} ADD COLUMN IF NOT EXISTS ${quoteName(column.name)} ${streamColumnTypeOf(column.type)}${jsonComment(column.type)}`,
        );
      types = new Map((await this.server.columnsOf(db, shape.table)).map((c) => [c.name, c.type]));
      // The stream writer reads the columns again at its next write.
      this.streamColumns.delete(`${db}.${shape.table}`);
    }
    return types;
  }

  /** Forgets the columns seen of the database's tables (it was dropped). */
  forget(db: string): void {
    for (const key of [...this.streamColumns.keys()])
      if (key.startsWith(`${db}.`)) this.streamColumns.delete(key);
  }

  private async ensureStreamColumns(
    db: string,
    table: string,
    primaryKey: string,
    records: readonly Record<string, unknown>[],
  ): Promise<string[]> {
    const name = `${db}.${table}`;
    const wanted = wantedColumns(primaryKey, records);
    const known = this.streamColumns.get(name);
    if (known && [...wanted.keys()].every((field) => known.has(field))) return [];
    const target = `${quoteName(db)}.${quoteName(table)}`;
    await this.server.command(streamTableStatement(target));
    const existing = await this.server.columnsOf(db, table);
    const columns = new Map(
      existing
        .filter((c) => !['id', '_raw', '_synced_at'].includes(c.name))
        .map((c): [string, ColumnType] => [
          c.name,
          c.comment === 'jsonb' ? 'jsonb' : columnTypeOfStored(c.type),
        ]),
    );
    const added: string[] = [];
    for (const [field, type] of wanted) {
      if (columns.has(field)) continue;
      await this.server.command(
        `ALTER TABLE ${target} ADD COLUMN IF NOT EXISTS ${quoteName(field)} ${streamColumnType[type]}${jsonComment(type)}`,
      );
      columns.set(field, type);
      added.push(field);
    }
    this.streamColumns.set(name, columns);
    return added;
  }
}

/** A stream column holding JSON is text marked by its comment, so a move out of ClickHouse types it jsonb again. */
const jsonComment = (type: string) => (type === 'jsonb' ? ` COMMENT 'jsonb'` : '');

/** A source stream's table: its key, the record, when it was synced; typed columns are added. */
const streamTableStatement = (target: string) =>
  `CREATE TABLE IF NOT EXISTS ${target} (id String, _raw String, _synced_at DateTime64(6, 'UTC')) ENGINE = ReplacingMergeTree(_synced_at) ORDER BY id`;
