import { isEgressRefusal } from '@pipeline/egress';
import type { WarehouseConnection } from '@pipeline/tenancy';
import {
  InvalidWarehouseConnection,
  warehouseClient,
  type GuardOptions,
  type WarehousePoolOptions,
} from './guarded-connection';

/** Why a warehouse failed its connection check; each has its own advice in docs/warehouses.md. */
export const warehouseCheckFailures = [
  /** A field cannot be used (a host that is no host name, a port out of range). */
  'warehouse_connection_invalid',
  /** The host is, or resolves to, an address the egress policy refuses (loopback, private, link-local). */
  'egress_address_refused',
  /** No answer: the name does not resolve, nothing listens, a firewall drops, or the connect timed out. */
  'warehouse_connection_refused',
  /** TLS could not be set up or verified (no TLS on the server, an untrusted or mismatched certificate). */
  'warehouse_tls_failed',
  /** The server refused the user or password, or the user may not CONNECT to the database. */
  'warehouse_login_failed',
  /** The database does not exist. */
  'warehouse_database_missing',
  /** The user can neither create the schema nor create tables in it. */
  'warehouse_permission_denied',
  /** Anything else the server answered. */
  'warehouse_check_failed',
] as const;
export type WarehouseCheckFailure = (typeof warehouseCheckFailures)[number];

export type WarehouseCheckResult =
  | { ok: true; schemaCreated: boolean; serverVersion: string }
  | { ok: false; code: WarehouseCheckFailure; message: string };

/** A schema name the warehouse accepts: a plain lowercase identifier, no quoting needed. */
export const warehouseSchemaPattern = /^[a-z_][a-z0-9_]{0,62}$/;

const networkCodes = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
]);

/**
 * The failure a connect or query error means. Messages are written here, never copied from
 * the error: a server's or driver's text may echo the user, a host or parts of a password.
 */
export function classifyWarehouseCheckError(error: unknown): {
  code: WarehouseCheckFailure;
  message: string;
} {
  if (error instanceof InvalidWarehouseConnection)
    return { code: 'warehouse_connection_invalid', message: `The ${error.field} ${error.rule}.` };
  if (isEgressRefusal(error))
    return {
      code: 'egress_address_refused',
      message:
        'The host is, or resolves to, an address that is not public (loopback, private, link-local or reserved): connections there are refused.',
    };
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  const text = typeof message === 'string' ? message : '';
  if (code === '28P01' || code === '28000')
    return {
      code: 'warehouse_login_failed',
      message:
        'The server refused the login: a wrong user or password, or no CONNECT privilege on the database.',
    };
  if (code === '3D000')
    return { code: 'warehouse_database_missing', message: 'The database does not exist.' };
  if (code === '42501')
    return {
      code: 'warehouse_permission_denied',
      message: 'The user may neither create the schema nor create tables in it (see the grant script).',
    };
  if (
    (typeof code === 'string' &&
      (code.startsWith('ERR_TLS') || code.includes('CERT') || code.includes('SELF_SIGNED'))) ||
    /SSL|TLS|certificate/i.test(text)
  )
    return {
      code: 'warehouse_tls_failed',
      message: 'TLS could not be set up or the certificate was not trusted for this host name.',
    };
  if ((typeof code === 'string' && networkCodes.has(code)) || /timeout|terminated unexpectedly/i.test(text))
    return {
      code: 'warehouse_connection_refused',
      message: 'The server could not be reached at this host and port (no answer, refused or timed out).',
    };
  return {
    code: 'warehouse_check_failed',
    message: `The server answered with an error${typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? ` (SQLSTATE ${code})` : ''}.`,
  };
}

const quoteIdent = (name: string) => `"${name.replace(/"/g, '""')}"`;

/**
 * Connects as the warehouse will (through the egress guard for a customer's server), runs
 * SELECT 1, and proves the user can create tables in `schema`: it creates the schema when
 * missing, then creates and rolls back a table in it. Never throws; never returns a server's
 * own text.
 */
export async function checkWarehouseConnection(
  connection: WarehouseConnection,
  schema: string,
  options: WarehousePoolOptions & GuardOptions = {},
): Promise<WarehouseCheckResult> {
  if (!warehouseSchemaPattern.test(schema))
    return {
      ok: false,
      code: 'warehouse_connection_invalid',
      message: 'The schema is not a plain lowercase identifier (a-z, 0-9, _; 63 at most).',
    };
  let client;
  try {
    client = warehouseClient(connection, {
      connectTimeoutMs: 10_000,
      statementTimeoutMs: 15_000,
      // The statement_timeout above is the server's to honour; this one is ours.
      readDeadlineMs: 20_000,
      ...options,
    });
  } catch (error) {
    return { ok: false, ...classifyWarehouseCheckError(error) };
  }
  // A failed connect may still emit 'error' later; unhandled it would end the process.
  client.on('error', () => undefined);
  try {
    try {
      await client.connect();
    } catch (error) {
      // At login, insufficient_privilege means no CONNECT on the database: a login failure.
      if ((error as { code?: unknown }).code === '42501')
        return { ok: false, ...classifyWarehouseCheckError({ code: '28000' }) };
      throw error;
    }
    const { rows } = await client.query<{ one: number; version: string }>(
      "SELECT 1 AS one, current_setting('server_version') AS version",
    );
    const found = await client.query<{ usable: boolean }>(
      `SELECT has_schema_privilege(n.oid, 'USAGE') AND has_schema_privilege(n.oid, 'CREATE') AS usable
         FROM pg_namespace n WHERE n.nspname = $1`,
      [schema],
    );
    const existing = found.rows[0];
    let schemaCreated = false;
    if (existing && !existing.usable) {
      return { ok: false, ...classifyWarehouseCheckError({ code: '42501' }) };
    }
    if (!existing) {
      await client.query(`CREATE SCHEMA IF NOT EXISTS ${quoteIdent(schema)}`);
      schemaCreated = true;
    }
    await client.query('BEGIN');
    try {
      await client.query(`CREATE TABLE ${quoteIdent(schema)}.pipeline_connection_check (id int)`);
    } finally {
      await client.query('ROLLBACK');
    }
    return { ok: true, schemaCreated, serverVersion: rows[0]?.version ?? '' };
  } catch (error) {
    return { ok: false, ...classifyWarehouseCheckError(error) };
  } finally {
    await client.end().catch(() => undefined);
  }
}
