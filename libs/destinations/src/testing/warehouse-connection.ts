import type { WarehouseConnection } from '@pipeline/tenancy';

/** The structured fields of a test database's URL: engines take fields, never a URL. */
export function warehouseConnectionOf(
  url: string,
  warehouseId: string,
  maxConnections = 5,
): WarehouseConnection {
  const parsed = new URL(url);
  return {
    warehouseId,
    engine: 'postgres',
    host: parsed.hostname,
    port: Number(parsed.port || 5432),
    database: decodeURIComponent(parsed.pathname.slice(1)),
    user: decodeURIComponent(parsed.username),
    password: decodeURIComponent(parsed.password),
    tlsMode: 'disable',
    owner: 'platform',
    maxConnections,
  };
}
