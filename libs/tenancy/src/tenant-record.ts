import type { DestinationCategory } from '@pipeline/events';
import type { PlanPolicy } from '@pipeline/tracking-plans';
import type { BoundFunction } from './bound-function';
import type { WarehousePlacement } from './warehouse-location';

/**
 * The tracking plan a write key binds (docs/tracking-plans.md): the version its events are held
 * to now, resolved by the control plane when the key is, and the policy of the binding.
 */
export interface TrackingPlanBinding {
  planId: string;
  /** `latest`: the newest published version, re-resolved on each publish; `pinned`: fixed. */
  binding: 'latest' | 'pinned';
  version: number;
  policy: PlanPolicy;
}

/** The warehouse a tenant record names: its account's placement. */
export type TenantWarehouse = { kind: 'warehouse' } & WarehousePlacement;

/** The category of a destination app type (the app catalog's), which decides its consent gate. */
export type DestinationKind = DestinationCategory;

/** Which integration a tenant's events go to, without anything needed to send them. */
export interface DestinationSummary {
  integrationId: string;
  kind: DestinationKind;
  appId: string;
  appType: string;
  dataType: string;
}

/** A forwarding destination of the tenant, with what is needed to deliver to it. */
export interface ResolvedDestination extends DestinationSummary {
  /** The integration's config, unmasked. */
  config: { global: Record<string, unknown>; tasks: { task_type: string; [field: string]: unknown }[] };
  /** The destination app's decrypted credentials. */
  credentials: Record<string, unknown>;
  /** The destination app's config, unmasked. */
  appConfig: Record<string, unknown>;
  /** The function version the integration binds; absent or null: events go as they are. */
  function?: BoundFunction | null;
}

interface TenantOf<Destination> {
  accountId: string;
  writeKeyId: string;
  /** A revoked key resolves with no destinations; ingestion answers it 401 invalid_write_key. */
  status: 'active' | 'revoked';
  /** Hostnames; the request Origin must be one of them or a subdomain. Empty: any. */
  allowedOrigins: string[];
  /** Per-key overrides of ingestion's shared limits; absent fields keep the defaults. */
  rateLimits?: { eventsPerSecond?: number; eventsPerDay?: number };
  destinations: Destination[];
  /**
   * Where the tenant's rows land in the warehouse: the placement only, never the connection (the
   * warehouse consumer resolves that from the control plane with its own token).
   */
  warehouse: TenantWarehouse | null;
  /** Absent or null: the key binds no tracking plan. */
  trackingPlan?: TrackingPlanBinding | null;
}

/**
 * What a write key resolves to for ingestion (hosted mode, docs/tracking-api.md#auth-modes): who
 * the key belongs to, its limits and where its events go, never a destination's credentials or
 * config (ingestion does not send to vendors, so it never holds their secrets).
 */
export type WriteKeyRecord = TenantOf<DestinationSummary>;

/**
 * A tenant as the forwarding consumers look it up by write key id: destinations with
 * credentials, and the functions they run. (The warehouse's function comes with its placement:
 * ResolvedWarehouse.)
 */
export type TenantRecord = TenantOf<ResolvedDestination> & {
  /** The write key's source function; reserved for the source-functions consumer, not filled yet. */
  sourceFunction?: BoundFunction | null;
};

/** The longest write key the API accepts anywhere (docs/tracking-api.md). */
export const MAX_WRITE_KEY_LENGTH = 200;

/**
 * Whether a string can be a write key at all: 1 to MAX_WRITE_KEY_LENGTH visible ASCII
 * characters. Anything else is answered 401 without asking the control plane.
 */
export const isPlausibleWriteKey = (value: string) =>
  value.length <= MAX_WRITE_KEY_LENGTH && /^[\x21-\x7e]+$/.test(value);
