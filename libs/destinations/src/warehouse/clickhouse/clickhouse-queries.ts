import type { AccountLocation, ReadOnlyQueries, ReadOnlyQueryName, ReadOptions } from '../warehouse-engine';
import { foldedTables, quoteName, storedTableOf } from './clickhouse-ddl';
import { storedTime } from './clickhouse-rows';
import { atParam, atText } from './clickhouse-changes';
import { checkDatabase, tableNames, type ClickHouseServer } from './clickhouse-server';

const utcDay = /^\d{4}-\d{2}-\d{2}$/;

/** The engine's named read-only queries over an account's tables, each metered by the bytes it read. */
export class ClickHouseQueries {
  constructor(private readonly server: ClickHouseServer) {}

  async query<K extends ReadOnlyQueryName>(
    account: AccountLocation,
    name: K,
    params: ReadOnlyQueries[K]['params'],
    options: ReadOptions,
  ): Promise<ReadOnlyQueries[K]['row'][]> {
    return (await this.namedQuery(account, name, params, options)) as ReadOnlyQueries[K]['row'][];
  }

  private async namedQuery(
    account: AccountLocation,
    name: ReadOnlyQueryName,
    params: ReadOnlyQueries[ReadOnlyQueryName]['params'],
    options: ReadOptions,
  ): Promise<unknown[]> {
    const db = quoteName(checkDatabase(account));
    const eventTime = `coalesce(timestamp, ${atText('received_at')})`;
    switch (name) {
      case 'existing_tables':
        return (await this.server.existingTables(account.schema)).map((table) => ({ table }));
      case 'has_rows': {
        const tables = await this.server.existingTables(account.schema);
        if (tables.length === 0) return [{ found: false }];
        const [row] = await this.server.metered<{ found: number }>(
          account,
          options,
          `SELECT ${tables.map((t) => `(SELECT count() > 0 FROM ${db}.${quoteName(storedTableOf(t))})`).join(' OR ')} AS found`,
        );
        return [{ found: Number(row?.found) === 1 }];
      }
      case 'event_names': {
        const { since } = params as ReadOnlyQueries['event_names']['params'];
        const rows = await this.server.metered<{
          type: string;
          name: string;
          count: string;
          first: string;
          last: string;
        }>(
          account,
          options,
          `SELECT type, if(type = 'page', coalesce(name, ''), coalesce(event, '')) AS name, toString(count()) AS count,
                  min(${eventTime}) AS first, max(${eventTime}) AS last
             FROM ${db}.events FINAL
            WHERE ${eventTime} > {since:String}
            GROUP BY type, name ORDER BY count() DESC, name`,
          { since: storedTime(since) },
        );
        return rows.map((r) => ({
          type: r.type,
          name: r.name,
          count: Number(r.count),
          firstSeen: new Date(r.first),
          lastSeen: new Date(r.last),
        }));
      }
      case 'event_property_types': {
        const { since } = params as ReadOnlyQueries['event_property_types']['params'];
        const rows = await this.server.metered<{
          type: string;
          event: string;
          property: string;
          json_type: string;
          count: string;
        }>(
          account,
          options,
          `SELECT type, if(type = 'page', coalesce(name, ''), coalesce(event, '')) AS event, kv.1 AS property,
                  multiIf(JSONType(kv.2) IN ('Int64', 'UInt64', 'Double'), 'number', JSONType(kv.2) = 'Bool', 'boolean',
                          JSONType(kv.2) = 'Null', 'null', JSONType(kv.2) = 'Array', 'array',
                          JSONType(kv.2) = 'Object', 'object', 'string') AS json_type,
                  toString(count()) AS count
             FROM ${db}.events FINAL
            ARRAY JOIN JSONExtractKeysAndValuesRaw(if(JSONType(ifNull(properties, 'null')) = 'Object', assumeNotNull(properties), '{}')) AS kv
            WHERE ${eventTime} > {since:String}
            GROUP BY type, event, property, json_type ORDER BY type, event, property, json_type`,
          { since: storedTime(since) },
        );
        return rows.map((r) => ({
          type: r.type,
          event: r.event,
          property: r.property,
          jsonType: r.json_type,
          count: Number(r.count),
        }));
      }
      case 'traffic_names':
      case 'traffic_profile':
      case 'traffic_rows':
        // Tracking plans from traffic read PostgreSQL warehouses only: the control plane answers
        // 409 warehouse_engine_unsupported for an account placed on ClickHouse and never asks.
        throw new Error(`the ${name} query is not available on ClickHouse`);
      case 'table_freshness': {
        const { table, now } = params as ReadOnlyQueries['table_freshness']['params'];
        if (!tableNames.includes(table)) throw new Error(`unknown warehouse table ${table}`);
        const rows = await this.server.metered<{
          rows: string;
          last_received: string | null;
          last_event: string | null;
          last_24h: string;
        }>(
          account,
          options,
          `SELECT toString(count()) AS rows, if(count() = 0, NULL, ${atText('max(received_at)')}) AS last_received,
                  max(timestamp) AS last_event,
                  toString(countIf(received_at > ${atParam('now')} - INTERVAL 24 HOUR)) AS last_24h
             FROM ${db}.${quoteName(table)}${foldedTables.has(table) ? '' : ' FINAL'}`,
          { now: now.toISOString() },
        );
        return rows.map((r) => ({
          rows: Number(r.rows),
          lastReceivedAt: r.last_received ? new Date(r.last_received) : null,
          lastEventAt: r.last_event ? new Date(r.last_event) : null,
          rowsLast24h: Number(r.last_24h),
        }));
      }
      case 'rows_received_on': {
        const { day } = params as ReadOnlyQueries['rows_received_on']['params'];
        if (!utcDay.test(day)) throw new Error(`invalid UTC day ${day}`);
        const tables = await this.server.existingTables(account.schema);
        if (tables.length === 0) return [{ rows: 0 }];
        const counts = tables.map(
          (t) =>
            `(SELECT count() FROM ${db}.${quoteName(t)}${foldedTables.has(t) ? '' : ' FINAL'} WHERE toDate(received_at, 'UTC') = toDate({day:String}))`,
        );
        const [row] = await this.server.metered<{ rows: string }>(
          account,
          options,
          `SELECT toString(${counts.join(' + ')}) AS rows`,
          { day },
        );
        return [{ rows: Number(row?.rows ?? 0) }];
      }
    }
  }
}
