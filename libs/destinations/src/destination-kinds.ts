import type { TopicSpec } from '@pipeline/kafka';
import type { Logger } from '@pipeline/logger';
import type { Destination } from './destination';
import { forwarderFor, forwardingAppTypes, type ForwarderOptions } from './forwarding/forwarder';
import { ForwardingDestination, type ForwardingLimits } from './forwarding/forwarding-destination';
import { LogDestination } from './log-destination';
import type { TenantDirectory } from './tenant-directory';
import { WarehouseDestination } from './warehouse/warehouse-destination';
import type { WarehouseTimeouts } from './warehouse/warehouse-pool';
import { WarehouseWriter } from './warehouse/warehouse-writer';

export interface DestinationDependencies {
  logger: Logger;
  /** The PostgreSQL warehouse (WAREHOUSE_URL). */
  warehouseUrl: string;
  /** Where forwarding kinds find each record's destinations (the control plane, cached). */
  tenants?: TenantDirectory;
  /** Vendor base URLs and HTTP settings for the forwarding kinds. */
  forwarding?: ForwarderOptions;
  /** Time budgets, concurrency and circuit breakers of the forwarding kinds. */
  forwardingLimits?: Partial<ForwardingLimits>;
  warehouseTimeouts?: WarehouseTimeouts;
}

/** Every kind `delivery --destination <kind>` can run, each in its own consumer groups. */
export const destinationKinds = ['log', 'warehouse', ...forwardingAppTypes] as const;

export type DestinationKind = (typeof destinationKinds)[number];

export function isDestinationKind(value: string): value is DestinationKind {
  return (destinationKinds as readonly string[]).includes(value);
}

/** True for the kinds that forward to vendors: they need the control plane for tenants. */
export const isForwardingKind = (kind: DestinationKind) => kind !== 'log' && kind !== 'warehouse';

export function createDestination(kind: DestinationKind, deps: DestinationDependencies): Destination {
  if (kind === 'log') return new LogDestination(deps.logger);
  if (kind === 'warehouse')
    return new WarehouseDestination(
      new WarehouseWriter(
        deps.warehouseUrl,
        deps.warehouseTimeouts ? { timeouts: deps.warehouseTimeouts } : {},
      ),
      deps.logger,
    );
  const forwarder = forwarderFor(kind, deps.forwarding);
  if (!forwarder || !deps.tenants)
    throw new Error(`destination ${kind} needs a forwarder and a tenant directory`);
  return new ForwardingDestination(forwarder, deps.tenants, deps.logger, deps.forwardingLimits);
}

/** The kind's consumer group, under KAFKA_TOPIC_PREFIX. */
export const consumerGroupFor = (kind: DestinationKind, prefix = '') => `${prefix}delivery.${kind}`;

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
      // Kept a month, for an operator to look into and replay.
      configEntries: { 'retention.ms': String(30 * 24 * 3600 * 1000) },
    },
  };
}
