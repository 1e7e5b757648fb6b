import type { WarehouseTlsMode } from '@pipeline/tenancy';

/** The connection fields of a warehouse, as stored (the password still in clear). */
export interface WarehouseFields {
  host: string;
  port: number;
  database: string;
  user: string;
  password: string;
  tlsMode: WarehouseTlsMode;
}

/**
 * libpq's sslmode as one of the three modes a warehouse keeps: the modes that may fall back to
 * clear text (allow, prefer) are stored as `disable`, since a warehouse connection is either
 * encrypted or not; `verify-ca` checks the certificate, which `require` does here.
 */
function tlsModeOf(sslmode: string | null): WarehouseTlsMode {
  if (sslmode === 'verify-full') return 'verify-full';
  if (sslmode === 'require' || sslmode === 'verify-ca') return 'require';
  return 'disable';
}

/**
 * The fields of WAREHOUSE_URL: the default warehouse is stored as structured fields, never as
 * the URL, whose parameters could redirect a connection.
 */
export function warehouseFieldsOfUrl(url: string): WarehouseFields {
  const parsed = new URL(url);
  const database = decodeURIComponent(parsed.pathname.replace(/^\//, '')) || 'postgres';
  const user = decodeURIComponent(parsed.username) || 'postgres';
  return {
    host: parsed.hostname.replace(/^\[(.*)\]$/, '$1') || 'localhost',
    port: parsed.port ? Number(parsed.port) : 5432,
    database,
    user,
    password: decodeURIComponent(parsed.password),
    tlsMode: tlsModeOf(parsed.searchParams.get('sslmode')),
  };
}
