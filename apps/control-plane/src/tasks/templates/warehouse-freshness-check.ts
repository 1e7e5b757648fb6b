import { warehouseTableNames, type WarehouseTableName } from '../../warehouse-access/warehouse-names';
import { bySeverity, summarize, type Finding, type TaskTemplate } from './template';

export interface WarehouseFreshnessParams {
  /** A table whose newest row was loaded longer ago than this is stale. */
  max_age_hours: number;
  /** The tables to check (default: all four). */
  tables: WarehouseTableName[];
}

interface TableMeasure {
  table: WarehouseTableName;
  exists: boolean;
  rows: number;
  /** When the newest row was loaded (received_at). */
  lastReceivedAt: string | null;
  /** The newest event time (timestamp). */
  lastEventAt: string | null;
  rowsLast24h: number;
}

const HOUR_MS = 3_600_000;

export const warehouseFreshnessCheck: TaskTemplate<WarehouseFreshnessParams> = {
  id: 'warehouse_freshness_check',
  version: 1,
  name: 'Warehouse data freshness check',
  description:
    "Measures, for each of the account's warehouse tables (events, users, groups, aliases), the " +
    'row count, when the newest row was loaded and the newest event time, and reports tables ' +
    'that are missing, empty or older than max_age_hours.',
  paramsSchema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      max_age_hours: { type: 'number', exclusiveMinimum: 0, maximum: 8760, default: 24 },
      tables: {
        type: 'array',
        items: { type: 'string', enum: [...warehouseTableNames] },
        minItems: 1,
        uniqueItems: true,
        default: [...warehouseTableNames],
      },
    },
  },
  prerequisites: [
    {
      kind: 'integration',
      appType: 'web_tracking',
      name: 'Web tracking (browser SDK)',
      hint: 'Connect a web_tracking app (POST /api/v1/apps) and send events to /collect',
    },
    {
      kind: 'data',
      data: 'warehouse_rows',
      name: 'warehouse tables',
      hint: 'No rows in the warehouse yet: send events with the browser SDK or POST /collect',
    },
  ],
  steps: [
    {
      id: 'inspect_schema',
      name: "Find the account's warehouse tables",
      async run({ warehouses, accountId, signal }): Promise<WarehouseTableName[]> {
        const { engine, account } = await warehouses.locate(accountId);
        const tables = await engine.query(account, 'existing_tables', {}, { purpose: 'model_query', signal });
        return tables.map((t) => t.table);
      },
    },
    {
      id: 'measure_tables',
      name: 'Measure row counts and the newest rows',
      async run({ warehouses, accountId, params, state, now, checkpoint, signal }): Promise<TableMeasure[]> {
        const { engine, account } = await warehouses.locate(accountId);
        const existing = state.inspect_schema as WarehouseTableName[];
        const measures: TableMeasure[] = [];
        for (const table of params.tables) {
          checkpoint();
          if (!existing.includes(table)) {
            measures.push({
              table,
              exists: false,
              rows: 0,
              lastReceivedAt: null,
              lastEventAt: null,
              rowsLast24h: 0,
            });
            continue;
          }
          const [row] = await engine.query(
            account,
            'table_freshness',
            { table, now },
            { purpose: 'model_query', signal },
          );
          if (!row) throw new Error('count(*) returned no row');
          measures.push({
            table,
            exists: true,
            rows: row.rows,
            lastReceivedAt: row.lastReceivedAt?.toISOString() ?? null,
            lastEventAt: row.lastEventAt?.toISOString() ?? null,
            rowsLast24h: row.rowsLast24h,
          });
        }
        return measures;
      },
    },
    {
      id: 'write_report',
      name: 'Write the report',
      async run({ state, params, now, warehouses, accountId }) {
        const { account } = await warehouses.locate(accountId);
        const measures = state.measure_tables as TableMeasure[];
        const findings: Finding[] = [];
        const tables = measures.map((m) => {
          const ageHours = m.lastReceivedAt
            ? Math.round(((now.getTime() - Date.parse(m.lastReceivedAt)) / HOUR_MS) * 10) / 10
            : null;
          const status = !m.exists
            ? 'missing'
            : m.rows === 0
              ? 'empty'
              : ageHours !== null && ageHours > params.max_age_hours
                ? 'stale'
                : 'fresh';
          const resource = { type: 'warehouse_table', name: m.table };
          if (status === 'missing') {
            findings.push({
              severity: 'warning',
              code: 'table_missing',
              resource,
              message: `The table ${m.table} does not exist: nothing was ever loaded`,
              recommendation: 'Check that a warehouse delivery consumer runs for this account',
            });
          } else if (status === 'empty') {
            findings.push({
              severity: 'warning',
              code: 'table_empty',
              resource,
              message: `The table ${m.table} has no rows`,
              recommendation: `Send ${m.table === 'events' ? 'track or page' : m.table === 'users' ? 'identify' : m.table === 'groups' ? 'group' : 'alias'} calls from the SDK`,
            });
          } else if (status === 'stale') {
            findings.push({
              severity: 'critical',
              code: 'stale_table',
              resource,
              message: `The newest row of ${m.table} was loaded ${ageHours} hours ago (limit ${params.max_age_hours})`,
              recommendation:
                'Check the tracking snippet on the site, ingestion /health and the warehouse consumer lag and dead letters',
            });
          }
          return { ...m, ageHours, status };
        });
        findings.sort(bySeverity);
        return {
          kind: 'warehouse_freshness_check',
          generatedAt: now.toISOString(),
          schema: account.schema,
          maxAgeHours: params.max_age_hours,
          fresh: tables.every((t) => t.status === 'fresh'),
          tables,
          summary: summarize(findings),
          findings,
        };
      },
    },
  ],
};
