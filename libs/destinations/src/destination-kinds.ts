import type { FunctionStep } from './functions/function-step';
import type { OutcomeRecorder } from './outcome-recorder';
import type { TopicSpec } from '@pipeline/kafka';
import type { Logger } from '@pipeline/logger';
import type { Destination } from './destination';
import type { Forwarder } from './forwarding/forwarder';
import { ForwardingDestination, type ForwardingLimits } from './forwarding/forwarding-destination';
import { LogDestination } from './log-destination';
import type { TenantDirectory } from './tenant-directory';
import type { BreakerTimings } from './warehouse/warehouse-breaker';
import {
  WarehouseDestination,
  type ReportWarehouseStatus,
  type WarehouseEngineSource,
} from './warehouse/warehouse-destination';
import {
  StaticWarehouseDirectory,
  warehouseConnectionFromUrl,
  type WarehouseDirectory,
} from './warehouse/warehouse-directory';
import { WarehouseEngines } from './warehouse/warehouse-engines';
import { guardedWarehousePools } from './warehouse/postgres/postgres-engine';
import { guardedClickHouseClients } from './warehouse/clickhouse/clickhouse-server';
import {
  defaultWarehouseTimeouts,
  type WarehousePoolLimits,
  type WarehouseTimeouts,
} from './warehouse/warehouse-pool';

export interface DestinationDependencies {
  logger: Logger;
  /**
   * The warehouse kind's WAREHOUSE_URL: every account's, unless `warehouseDirectory` says
   * otherwise. The other kinds never get it (it holds the platform warehouse's password).
   */
  warehouseUrl?: string;
  /** Where each account's rows go (the control plane's placements); unset: all to `warehouseUrl`. */
  warehouseDirectory?: WarehouseDirectory;
  /** Each warehouse's engine; unset: the engine its connection names, per warehouse (WarehouseEngines). */
  warehouseEngines?: WarehouseEngineSource;
  /** The connections of all warehouse pools together, and when an idle one closes. */
  warehousePoolLimits?: WarehousePoolLimits;
  /** Tells the control plane a warehouse refuses the consumer, and when it works again. */
  reportWarehouseStatus?: ReportWarehouseStatus;
  /** Cooldowns of the per-warehouse breakers. */
  warehouseBreaker?: Partial<BreakerTimings>;
  /** A customer-owned warehouse's time in one batch (WAREHOUSE_CUSTOMER_BATCH_BUDGET_MS). */
  warehouseCustomerBudgetMs?: number;
  /** Where forwarding kinds find each record's destinations (the control plane, cached). */
  tenants?: TenantDirectory;
  /** Time budgets, concurrency and circuit breakers of the forwarding kinds. */
  forwardingLimits?: Partial<ForwardingLimits>;
  warehouseTimeouts?: WarehouseTimeouts;
  /** Rows of one account and table per COPY (WAREHOUSE_ROWS_PER_COPY). */
  warehouseRowsPerCopy?: number;
  /**
   * Private ranges a customer-owned warehouse may resolve to (EGRESS_ALLOW_PRIVATE_RANGES);
   * every connect to one is checked against the egress policy, these excepted.
   */
  egressAllowPrivateRanges?: readonly string[];
  /** The ON CLUSTER name of ClickHouse warehouses (WAREHOUSE_CLICKHOUSE_CLUSTER); unset: none. */
  clickhouseCluster?: string;
  /** Told where each event went (the live debugger); unset: nothing recorded. */
  outcomes?: OutcomeRecorder;
  /** Runs the functions bound to destinations; unset: a destination with one has its events held. */
  functions?: FunctionStep;
}

// WAREHOUSE_PROCESS_MAX_CONNECTIONS and WAREHOUSE_POOL_IDLE_MS's defaults.
const defaultWarehousePoolLimits: WarehousePoolLimits = { processMaxConnections: 20, idleMs: 60_000 };

/**
 * What `delivery --destination <kind>` runs: the log, the warehouse, or a forwarding app type
 * of the app catalog (@pipeline/catalog lists them all as `deliveryKinds`).
 */
export type DestinationKind = string;

/** True for the kinds that forward to vendors: they need the control plane for tenants. */
export const isForwardingKind = (kind: DestinationKind) => kind !== 'log' && kind !== 'warehouse';

/**
 * The destination of a kind. A forwarding kind needs its vendor client (`forwarder`, built by
 * the app catalog) and the tenant directory.
 */
export function createDestination(
  kind: DestinationKind,
  deps: DestinationDependencies & { forwarder?: Forwarder },
): Destination {
  if (kind === 'log') return new LogDestination(deps.logger);
  if (kind === 'warehouse')
    return new WarehouseDestination({
      directory:
        deps.warehouseDirectory ?? new StaticWarehouseDirectory(staticWarehouseOf(deps.warehouseUrl)),
      engines: deps.warehouseEngines ?? warehouseEnginesOf(deps),
      logger: deps.logger,
      ...(deps.outcomes ? { outcomes: deps.outcomes } : {}),
      ...(deps.functions ? { functions: deps.functions } : {}),
      ...(deps.reportWarehouseStatus ? { reportStatus: deps.reportWarehouseStatus } : {}),
      ...(deps.warehouseBreaker ? { breaker: deps.warehouseBreaker } : {}),
      ...(deps.warehouseCustomerBudgetMs ? { customerBudgetMs: deps.warehouseCustomerBudgetMs } : {}),
    });
  const forwarder = deps.forwarder;
  if (!forwarder || forwarder.appType !== kind || !deps.tenants)
    throw new Error(`destination ${kind} needs a forwarder and a tenant directory`);
  return new ForwardingDestination(
    forwarder,
    deps.tenants,
    deps.logger,
    deps.forwardingLimits,
    deps.outcomes,
    deps.functions,
  );
}

function staticWarehouseOf(url: string | undefined) {
  if (url === undefined)
    throw new Error('destination warehouse needs WAREHOUSE_URL or a warehouse directory');
  return warehouseConnectionFromUrl(url);
}

/** The warehouse consumer's engines: each warehouse's own, every connect egress-guarded. */
function warehouseEnginesOf(deps: DestinationDependencies): WarehouseEngines {
  const guard = { allowPrivateRanges: deps.egressAllowPrivateRanges ?? [] };
  const timeouts = deps.warehouseTimeouts ?? defaultWarehouseTimeouts;
  return WarehouseEngines.open(deps.warehousePoolLimits ?? defaultWarehousePoolLimits, {
    postgres: {
      timeouts,
      connect: guardedWarehousePools(guard),
      ...(deps.warehouseRowsPerCopy ? { rowsPerCopy: deps.warehouseRowsPerCopy } : {}),
    },
    clickhouse: {
      timeouts,
      connect: guardedClickHouseClients(guard),
      ...(deps.clickhouseCluster ? { cluster: deps.clickhouseCluster } : {}),
    },
  });
}

/** The kind's consumer group, under KAFKA_TOPIC_PREFIX. */
export const consumerGroupFor = (kind: DestinationKind, prefix = '') => `${prefix}delivery.${kind}`;

/**
 * How long a dead-letter topic keeps a record: a month, for an operator to look into and
 * replay. The control plane's dead-letter index keeps its rows as long by default
 * (DEAD_LETTER_INDEX_RETENTION_DAYS).
 */
export const DEAD_LETTER_RETENTION_MS = 30 * 24 * 3600 * 1000;

/** Each kind's own retry and dead-letter topics (under KAFKA_TOPIC_PREFIX): one kind's failures never hold back another. */
export function deliveryTopicsFor(
  kind: DestinationKind,
  prefix = '',
): { retry: TopicSpec; deadLetter: TopicSpec } {
  return {
    retry: {
      topic: `${prefix}delivery.${kind}.retry.v1`,
      numPartitions: 6,
      configEntries: { 'retention.ms': String(7 * 24 * 3600 * 1000) },
    },
    deadLetter: {
      topic: `${prefix}delivery.${kind}.dead-letter.v1`,
      numPartitions: 1,
      configEntries: { 'retention.ms': String(DEAD_LETTER_RETENTION_MS) },
    },
  };
}
