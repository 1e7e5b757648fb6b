import { parseJsonText } from '@pipeline/events';
import type { AccountLocation, ChangedRow, ChangeRequest, ReadOptions } from '../warehouse-engine';
import { isPlainIdentifier } from '../stream-table-columns';
import { quoteName } from './clickhouse-ddl';
import { checkDatabase, summaryOf, type ClickHouseServer } from './clickhouse-server';

/** A timestamp column as the watermark text: ISO-8601 with microseconds and a Z. */
export const atText = (column: string) => `formatDateTime(${column}, '%Y-%m-%dT%H:%i:%S.%fZ', 'UTC')`;
/** A watermark's time (ISO text) as DateTime64(6). */
export const atParam = (name: string) => `parseDateTime64BestEffort({${name}:String}, 6, 'UTC')`;

interface ChangeQuery {
  table: string;
  sql: string;
  params: Record<string, unknown>;
  toChange: (row: Record<string, unknown>) => ChangedRow;
}

const parsedJson = (text: unknown): unknown => (typeof text === 'string' ? parseJsonText(text) : text);

function changeQuery(db: string, request: ChangeRequest): ChangeQuery {
  const { at, key } = request.since;
  const since = { at, key };
  if (request.kind === 'users') {
    return {
      table: 'users',
      sql: `SELECT user_id, anonymous_id, traits, ${atText('received_at')} AS at
              FROM ${db}.users
             WHERE (received_at, user_id) > (${atParam('at')}, {key:String})
             ORDER BY received_at, user_id`,
      params: since,
      toChange: ({ at: rowAt, ...row }) => ({
        at: String(rowAt),
        key: String(row.user_id),
        row: { ...row, traits: parsedJson(row.traits) },
      }),
    };
  }
  if (request.kind === 'events') {
    return {
      table: 'events',
      sql: `SELECT message_id, type, event, name, properties, anonymous_id, user_id, timestamp,
                   ${atText('received_at')} AS at
              FROM ${db}.events FINAL
             WHERE received_at >= ${atParam('receivedSince')}
               AND (received_at, message_id) > (${atParam('at')}, {key:String})
               AND ({all:UInt8} = 1 OR coalesce(event, name) IN {names:Array(String)})
             ORDER BY received_at, message_id`,
      params: {
        ...since,
        receivedSince: request.receivedSince.toISOString(),
        all: request.names === null ? 1 : 0,
        names: request.names ?? [],
      },
      toChange: ({ at: rowAt, ...row }) => ({
        at: String(rowAt),
        key: String(row.message_id),
        row: { ...row, properties: parsedJson(row.properties) },
      }),
    };
  }
  if (!isPlainIdentifier(request.table)) throw new Error(`invalid stream table name ${request.table}`);
  return {
    table: request.table,
    sql: `SELECT id AS key, _raw AS raw, ${atText('_synced_at')} AS at FROM ${db}.${quoteName(request.table)} FINAL
           WHERE (_synced_at, id) > (${atParam('at')}, {key:String})
           ORDER BY _synced_at, id`,
    params: since,
    toChange: (row) => ({
      at: String(row.at),
      key: String(row.key),
      row: parsedJson(row.raw) as Record<string, unknown>,
    }),
  };
}

/** An account's changes after a watermark, read from one query and metered by its bytes. */
export class ClickHouseChanges {
  constructor(private readonly server: ClickHouseServer) {}

  async read(
    account: AccountLocation,
    request: ChangeRequest,
    options: ReadOptions & { batchRows: number },
  ): Promise<AsyncIterable<ChangedRow[]> | null> {
    const db = checkDatabase(account);
    const query = changeQuery(quoteName(db), request);
    if (!(await this.server.tableExists(account.schema, query.table))) return null;
    return this.batches(account, query, options);
  }

  /**
   * The change query's rows in batches, from one query: one scan and sort however many
   * batches. The server answers once the query has ended (wait_end_of_query), so its summary,
   * the bytes metered, is whole; the rows then stream as the caller takes them.
   */
  private async *batches(
    account: AccountLocation,
    query: ChangeQuery,
    options: ReadOptions & { batchRows: number },
  ): AsyncGenerator<ChangedRow[]> {
    const batchRows = Math.max(1, Math.floor(options.batchRows));
    options.signal?.throwIfAborted();
    const result = await this.server.client.query({
      query: query.sql,
      query_params: query.params,
      format: 'JSONEachRow',
      clickhouse_settings: { ...this.server.settings, readonly: '1', wait_end_of_query: 1 },
      ...(options.signal ? { abort_signal: options.signal } : {}),
    });
    const bytes = Number(summaryOf(result.response_headers).read_bytes ?? 0);
    const stream = result.stream<Record<string, unknown>>();
    try {
      let pending: ChangedRow[] = [];
      for await (const chunk of stream) {
        for (const row of chunk) {
          pending.push(query.toChange(row.json()));
          if (pending.length >= batchRows) {
            yield pending;
            pending = [];
          }
        }
      }
      if (pending.length > 0) yield pending;
    } finally {
      stream.destroy();
      await this.server.record(account.accountId, options.purpose, bytes);
    }
  }
}
