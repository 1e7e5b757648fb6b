import { z } from 'zod';
import { LRUCache } from 'lru-cache';
import type { Logger } from '@pipeline/logger';
import {
  usableCacheEntry,
  warehouseSchemaFor,
  type ResolvedWarehouse,
  type TenantChangeEvent,
  type WarehouseConnection,
  type WarehouseTlsMode,
} from '@pipeline/tenancy';
import { DestinationUnavailable } from '../destination';

/**
 * Where the warehouse consumer writes an account's rows. Two kinds: every account on the one
 * warehouse of WAREHOUSE_URL (no control plane), or what the control plane's placements say.
 */
export interface WarehouseDirectory {
  /**
   * The account's warehouse, null when it has none (unknown account). Throws
   * DestinationUnavailable when that cannot be known now: nothing can be routed then.
   */
  resolve(accountId: string): Promise<ResolvedWarehouse | null>;
  /**
   * The newest placement epoch seen for the account: a placement with an older one was cut
   * over to another warehouse while it was held, and must be resolved again before a write.
   */
  currentEpoch(accountId: string): number;
  /** Forgets what a tenant change makes stale (a placement that moved, a rotated password). */
  invalidate(event: TenantChangeEvent): void;
}

/** The settings of WAREHOUSE_URL a connection can carry; anything else is refused, not ignored. */
const urlTlsModes: Record<string, WarehouseTlsMode> = {
  disable: 'disable',
  prefer: 'require',
  require: 'require',
  'no-verify': 'require',
  'verify-ca': 'verify-full',
  'verify-full': 'verify-full',
};

/** The schemes WAREHOUSE_URL may have: PostgreSQL's two, ClickHouse over HTTP and over HTTPS. */
export const warehouseUrlSchemes = ['postgres', 'postgresql', 'clickhouse', 'clickhouses'] as const;

export interface WarehouseUrlOptions {
  warehouseId?: string;
  maxConnections?: number;
}

/**
 * The structured connection of WAREHOUSE_URL, the default warehouse (and the one warehouse of a
 * consumer without a control plane):
 * - `postgres://user:password@host:port/database?sslmode=...` (PostgreSQL; sslmode the one
 *   parameter);
 * - `clickhouse://user:password@host:8123/database` (ClickHouse over HTTP) and
 *   `clickhouses://user:password@host:8443/database` (HTTPS, certificate and host name
 *   verified), without any parameter.
 * A URL naming a socket directory, several hosts or parameters it cannot carry is refused: a
 * connection is its fields. No message repeats the URL (it holds the password).
 */
export function warehouseConnectionFromUrl(
  url: string,
  options: WarehouseUrlOptions = {},
): WarehouseConnection {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new Error('WAREHOUSE_URL is not a URL');
  }
  switch (parsed.protocol) {
    case 'postgres:':
    case 'postgresql:':
      return postgresConnectionOf(parsed, options);
    case 'clickhouse:':
    case 'clickhouses:':
      return clickhouseConnectionOf(parsed, options);
    default:
      throw new Error(
        `WAREHOUSE_URL must be a postgres:// or clickhouse:// (clickhouses://) URL, not ${parsed.protocol}`,
      );
  }
}

function postgresConnectionOf(parsed: URL, options: WarehouseUrlOptions): WarehouseConnection {
  const unsupported = [...parsed.searchParams.keys()].filter((name) => name !== 'sslmode');
  if (unsupported.length > 0)
    throw new Error(`WAREHOUSE_URL parameters not supported: ${unsupported.join(', ')}`);
  const sslmode = parsed.searchParams.get('sslmode') ?? 'disable';
  const tlsMode = urlTlsModes[sslmode];
  if (!tlsMode) throw new Error(`WAREHOUSE_URL sslmode not supported: ${sslmode}`);
  // An IPv6 host comes in brackets, the only place a hostname can hold one.
  const host = parsed.hostname.replace(/[[\]]/g, '');
  if (!host) throw new Error('WAREHOUSE_URL names no host');
  const user = decodeURIComponent(parsed.username) || 'postgres';
  return {
    warehouseId: options.warehouseId ?? 'default',
    engine: 'postgres',
    host,
    port: parsed.port ? Number(parsed.port) : 5432,
    database: decodeURIComponent(parsed.pathname.slice(1)) || user,
    user,
    password: decodeURIComponent(parsed.password),
    tlsMode,
    owner: 'platform',
    maxConnections: options.maxConnections ?? 5,
  };
}

/** A host name (letters, digits, inner hyphens and dots) or an IPv4 address. */
const CLICKHOUSE_HOST =
  /^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*$/;
/** An IPv6 address as it stands in brackets. */
const IPV6 = /^\[[0-9a-f:.]{2,45}\]$/;
/** A ClickHouse database (and user) name as the URL may give it: a plain identifier, never quoted. */
const CLICKHOUSE_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

const decodedPart = (text: string, what: string): string => {
  try {
    return decodeURIComponent(text);
  } catch {
    throw new Error(`WAREHOUSE_URL ${what} is not valid percent-encoding`);
  }
};

/**
 * `clickhouse://` (HTTP, port 8123) or `clickhouses://` (HTTPS with the certificate and host name
 * verified, port 8443); the path is the database the engine connects to first (`default`),
 * the user `default` when absent. ClickHouse's URL is not a special scheme to the URL parser:
 * its host comes back as written, so it is checked here, not trusted.
 */
function clickhouseConnectionOf(parsed: URL, options: WarehouseUrlOptions): WarehouseConnection {
  const https = parsed.protocol === 'clickhouses:';
  // Any parameter, even an empty `?`, and any fragment: a ClickHouse URL carries none.
  if (parsed.search !== '' || parsed.href.includes('?'))
    throw new Error('WAREHOUSE_URL parameters not supported: a clickhouse:// URL takes none');
  if (parsed.hash !== '' || parsed.href.includes('#'))
    throw new Error('WAREHOUSE_URL fragment not supported');
  const rawHost = parsed.hostname.toLowerCase();
  if (!rawHost) throw new Error('WAREHOUSE_URL names no host');
  let host: string;
  if (IPV6.test(rawHost)) host = rawHost.slice(1, -1);
  else if (CLICKHOUSE_HOST.test(rawHost)) host = rawHost;
  else throw new Error('WAREHOUSE_URL host must be a host name or an IP address');
  const port = parsed.port ? Number(parsed.port) : https ? 8443 : 8123;
  if (!Number.isInteger(port) || port < 1 || port > 65535)
    throw new Error('WAREHOUSE_URL port must be from 1 to 65535');
  const path = parsed.pathname;
  if (path !== '' && path !== '/' && !/^\/[^/]+$/.test(path))
    throw new Error('WAREHOUSE_URL path must be one database name');
  const database = decodedPart(path.slice(1), 'database') || 'default';
  if (!CLICKHOUSE_NAME.test(database))
    throw new Error('WAREHOUSE_URL database must be a plain name (letters, digits and _, at most 63)');
  const user = decodedPart(parsed.username, 'user') || 'default';
  if (!CLICKHOUSE_NAME.test(user))
    throw new Error('WAREHOUSE_URL user must be a plain name (letters, digits and _, at most 63)');
  const password = decodedPart(parsed.password, 'password');
  return {
    warehouseId: options.warehouseId ?? 'default',
    engine: 'clickhouse',
    host,
    port,
    database,
    user,
    password,
    tlsMode: https ? 'verify-full' : 'disable',
    owner: 'platform',
    maxConnections: options.maxConnections ?? 5,
  };
}

/**
 * WAREHOUSE_URL as a config field: one of the schemes, and a URL warehouseConnectionFromUrl
 * takes, so that a form it refuses stops the process at start with the variable's name.
 */
export function warehouseUrlField(defaultValue?: string) {
  const field = z.string().superRefine((value, ctx) => {
    try {
      warehouseConnectionFromUrl(value);
    } catch (error) {
      ctx.addIssue({ code: 'custom', message: (error as Error).message.replace(/^WAREHOUSE_URL /, '') });
    }
  });
  return defaultValue === undefined ? field : field.default(defaultValue);
}

/** Every account on one warehouse, in its own schema: the consumer as it runs without a control plane. */
export class StaticWarehouseDirectory implements WarehouseDirectory {
  constructor(private readonly connection: WarehouseConnection) {}

  resolve(accountId: string): Promise<ResolvedWarehouse> {
    const { warehouseId, engine } = this.connection;
    return Promise.resolve({
      placement: { warehouseId, engine, schema: warehouseSchemaFor(accountId), epoch: 0 },
      connection: this.connection,
    });
  }

  currentEpoch(): number {
    return 0;
  }

  invalidate(): void {
    // One warehouse for good: nothing to forget.
  }
}

/** The control plane's answer for an account: its placement and connection, or null for none. */
export type ResolveWarehouse = (accountId: string) => Promise<ResolvedWarehouse | null>;

export interface ResolvingDirectoryOptions {
  /** How long an answer is used before the control plane is asked again. */
  ttlMs: number;
  /** How long an account without a warehouse is remembered (the TTL, at most 10 s, unless told). */
  unknownTtlMs?: number;
  /** How long past its TTL an answer is still used while the control plane cannot be asked. */
  staleIfErrorMs?: number;
  maxEntries?: number;
  /**
   * Whether tenant changes are being heard (the subscription is live). While not, an answer is
   * used at most UNSUBSCRIBED_MAX_TTL_MS (10 s), so a cut-over reaches this consumer within that
   * bound. Unset: they are.
   */
  hearsChanges?: () => boolean;
  now?: () => number;
}

interface Entry {
  resolved: ResolvedWarehouse | null;
  storedAt: number;
  expiresAt: number;
}

/**
 * Placements from the control plane (its internal resolve endpoint), cached per account.
 * Concurrent resolves of one account share one request. A tenant change drops the account's
 * entry, and an answer to a request under way when it was heard is handed out but not kept.
 * While the control plane cannot be asked, an answer up to `staleIfErrorMs` past its TTL is
 * still used; without one the records cannot be routed: DestinationUnavailable, and the
 * runner holds the batch until it can be asked again.
 */
export class ResolvingWarehouseDirectory implements WarehouseDirectory {
  private readonly entries: LRUCache<string, Entry>;
  private readonly epochs: LRUCache<string, number>;
  private readonly inFlight = new Map<string, Promise<ResolvedWarehouse | null>>();
  /** Counts invalidations; an answer is kept only when none that concerns it came after its request. */
  private changes = 0;
  private readonly changedAt = new Map<string, number>();
  private resyncedAt = 0;
  private readonly options: Required<ResolvingDirectoryOptions>;

  constructor(
    private readonly resolver: ResolveWarehouse,
    options: ResolvingDirectoryOptions,
    private readonly logger: Logger,
  ) {
    this.options = {
      unknownTtlMs: Math.min(options.ttlMs, 10_000),
      staleIfErrorMs: 15 * 60_000,
      maxEntries: 100_000,
      hearsChanges: () => true,
      now: Date.now,
      ...options,
    };
    this.entries = new LRUCache({ max: this.options.maxEntries });
    this.epochs = new LRUCache({ max: this.options.maxEntries });
  }

  resolve(accountId: string): Promise<ResolvedWarehouse | null> {
    const entry = this.entries.get(accountId);
    const now = this.options.now();
    if (
      entry &&
      usableCacheEntry(entry, now, this.options.hearsChanges()) &&
      this.isCurrent(accountId, entry.resolved)
    )
      return Promise.resolve(entry.resolved);
    let pending = this.inFlight.get(accountId);
    if (!pending) {
      pending = this.lookUp(accountId, entry).finally(() => this.inFlight.delete(accountId));
      this.inFlight.set(accountId, pending);
    }
    return pending;
  }

  currentEpoch(accountId: string): number {
    return this.epochs.get(accountId) ?? 0;
  }

  invalidate(event: TenantChangeEvent): void {
    this.changes += 1;
    if (event.kind === 'resync') {
      this.resyncedAt = this.changes;
      this.entries.clear();
      return;
    }
    this.changedAt.set(event.accountId, this.changes);
    this.entries.delete(event.accountId);
    // Bounded: only accounts changed since the oldest request under way matter.
    if (this.changedAt.size > this.options.maxEntries) this.changedAt.clear();
  }

  private isCurrent(accountId: string, resolved: ResolvedWarehouse | null): boolean {
    return resolved === null || resolved.placement.epoch >= this.currentEpoch(accountId);
  }

  private async lookUp(accountId: string, stale: Entry | undefined): Promise<ResolvedWarehouse | null> {
    const asked = this.changes;
    let resolved: ResolvedWarehouse | null;
    try {
      resolved = await this.resolver(accountId);
      // An answer from before a cut-over this process already saw (a lagging replica): once more.
      if (!this.isCurrent(accountId, resolved)) resolved = await this.resolver(accountId);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      if (stale && stale.expiresAt + this.options.staleIfErrorMs > this.options.now()) {
        this.logger.warn('warehouse placement served stale: the control plane cannot be asked', {
          accountId,
          error: message,
        });
        return stale.resolved;
      }
      throw new DestinationUnavailable(`warehouse placement unknown: ${message}`, { cause: error });
    }
    if (!this.isCurrent(accountId, resolved))
      throw new DestinationUnavailable(
        `warehouse placement of ${accountId} is older than epoch ${this.currentEpoch(accountId)}`,
      );
    if (resolved)
      this.epochs.set(accountId, Math.max(this.currentEpoch(accountId), resolved.placement.epoch));
    const heardChange = (this.changedAt.get(accountId) ?? 0) > asked || this.resyncedAt > asked;
    if (!heardChange) {
      const ttl = resolved ? this.options.ttlMs : this.options.unknownTtlMs;
      const storedAt = this.options.now();
      this.entries.set(accountId, { resolved, storedAt, expiresAt: storedAt + ttl });
    }
    return resolved;
  }
}
