import { clickhouseClient, type ClickHouseGuardOptions } from '@pipeline/clickhouse';
import type { ClickHouseClientFactory } from './clickhouse-engine';

/**
 * Clients built by @pipeline/clickhouse's clickhouseClient: every field set, never a URL, and
 * for a customer's server every connect checked against the egress policy (`guard`: the
 * operator's EGRESS_ALLOW_PRIVATE_RANGES; none by default, so a private address is refused),
 * as guardedWarehousePools does for PostgreSQL.
 */
export const guardedClickHouseClients =
  (guard: ClickHouseGuardOptions = {}): ClickHouseClientFactory =>
  (connection, settings) =>
    clickhouseClient(connection, {
      guard,
      requestTimeoutMs: settings.requestTimeoutMs,
      idleSocketTtlMs: settings.idleSocketTtlMs,
      maxOpenConnections: settings.maxOpenConnections,
    });
