export type DestinationKind =
  'product_analytics' | 'messaging' | 'customer_data' | 'push' | 'advertising' | 'webhook';

/** A forwarding destination of the tenant, with what is needed to deliver to it. */
export interface ResolvedDestination {
  integrationId: string;
  kind: DestinationKind;
  appId: string;
  appType: string;
  dataType: string;
  /** The integration's config, unmasked. */
  config: { global: Record<string, unknown>; tasks: { task_type: string; [field: string]: unknown }[] };
  /** The destination app's decrypted credentials. */
  credentials: Record<string, unknown>;
  /** The destination app's config, unmasked. */
  appConfig: Record<string, unknown>;
}

/**
 * What a write key resolves to (spec 5.2, hosted mode): the control plane's internal endpoint
 * returns it and the ingestion service caches it.
 */
export interface TenantRecord {
  accountId: string;
  writeKeyId: string;
  /** A revoked key resolves with no destinations; ingestion answers it 401 invalid_write_key. */
  status: 'active' | 'revoked';
  /** Hostnames; the request Origin must be one of them or a subdomain. Empty: any. */
  allowedOrigins: string[];
  /** Per-key overrides of ingestion's shared limits; absent fields keep the defaults. */
  rateLimits?: { eventsPerSecond?: number; eventsPerDay?: number };
  destinations: ResolvedDestination[];
  warehouse: { kind: 'warehouse'; schema: string } | null;
}
