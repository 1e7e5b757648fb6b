import { randomBytes } from 'node:crypto';
import type { lookup as dnsLookup } from 'node:dns';
import { isEgressRefusal, lookupOver, type ResolveAll } from '@pipeline/egress';
import type { WarehouseConnection } from '@pipeline/tenancy';
import {
  clickhouseClient,
  hasControlCharacter,
  InvalidClickHouseConnection,
  isHostOrAddress,
} from './clickhouse-client';

/**
 * Why a ClickHouse warehouse failed its connection check: the codes of the PostgreSQL check
 * (libs/postgres/src/warehouse-connection-check.ts), so a customer's app answers the same
 * codes whatever its engine. Each has its advice in docs/warehouses.md.
 */
export const clickhouseCheckFailures = [
  /** A field cannot be used (a host that is no host name, a database name that needs quoting). */
  'warehouse_connection_invalid',
  /** The host is, or resolves to, an address the egress policy refuses (loopback, private, link-local). */
  'egress_address_refused',
  /** No answer: the name does not resolve, nothing listens, a firewall drops, or a timeout. */
  'warehouse_connection_refused',
  /** TLS could not be set up or verified (plain HTTP on the port, an untrusted or mismatched certificate). */
  'warehouse_tls_failed',
  /** The server refused the user or password (ClickHouse 516 AUTHENTICATION_FAILED, 192-194). */
  'warehouse_login_failed',
  /** The database does not exist (81 UNKNOWN_DATABASE) and the user may not create it. */
  'warehouse_database_missing',
  /** The user may not create, alter, insert into, select from or drop tables there (497 ACCESS_DENIED). */
  'warehouse_permission_denied',
  /** Anything else the server answered. */
  'warehouse_check_failed',
] as const;
export type ClickHouseCheckFailure = (typeof clickhouseCheckFailures)[number];

export type ClickHouseCheckResult =
  | { ok: true; databaseCreated: boolean; serverVersion: string }
  | { ok: false; code: ClickHouseCheckFailure; message: string };

/**
 * A database name used unquoted: a plain lowercase identifier (the account's placement names it
 * as its schema), 63 at most, not the server's own `system` or `information_schema`.
 */
export const clickhouseDatabasePattern = /^(?!(?:system|information_schema)$)[a-z_][a-z0-9_]{0,62}$/;

/** Why a customer's ClickHouse connection fields cannot be used, or undefined. */
export function clickhouseConnectionProblem(
  connection: WarehouseConnection,
): InvalidClickHouseConnection | undefined {
  const { host, port, database, user, password, tlsMode } = connection;
  if (!isHostOrAddress(host))
    return new InvalidClickHouseConnection('host', 'is not a DNS name or an IP address');
  if (!Number.isInteger(port) || port < 1 || port > 65535)
    return new InvalidClickHouseConnection('port', 'is not a port number (1-65535)');
  if (typeof database !== 'string' || !clickhouseDatabasePattern.test(database))
    return new InvalidClickHouseConnection(
      'database',
      'is not a plain lowercase identifier (a-z or _ first, then a-z, 0-9, _; 63 at most; not system)',
    );
  if (typeof user !== 'string' || user.length === 0 || user.length > 63 || hasControlCharacter(user))
    return new InvalidClickHouseConnection('user', 'must be 1-63 characters without control characters');
  if (typeof password !== 'string' || password.length > 1024 || password.includes('\u0000'))
    return new InvalidClickHouseConnection('password', 'must be at most 1024 characters without NUL');
  if (!(['disable', 'require', 'verify-full'] as const).includes(tlsMode))
    return new InvalidClickHouseConnection('tlsMode', 'must be disable, require or verify-full');
  return undefined;
}

/** What the check asks of a ClickHouse client (a @clickhouse/client client has it). */
export interface ClickHouseCheckClient {
  query(params: {
    query: string;
    format: 'JSONEachRow';
    query_params?: Record<string, unknown>;
  }): Promise<{ json<T>(): Promise<T[]> }>;
  command(params: { query: string; query_params?: Record<string, unknown> }): Promise<unknown>;
  close(): Promise<void>;
}

export interface ClickHouseCheckOptions {
  /** Operator-allowed ranges (EGRESS_ALLOW_PRIVATE_RANGES); tests allow loopback with it. */
  allowPrivateRanges?: readonly string[];
  /** Name resolution; the system resolver by default (tests give their own). */
  lookup?: typeof dnsLookup;
  /** Name resolution as the egress checks of saved URLs take it; used when `lookup` is absent. */
  resolve?: ResolveAll;
  /** Each request's limit; 15 s by default. */
  requestTimeoutMs?: number;
  /** Trusted CAs for verify-full instead of Node's bundled ones (an operator's private CA). */
  ca?: string | Buffer | readonly (string | Buffer)[];
  /**
   * The client the check uses, connected to the server without choosing a database (the
   * database may not exist yet). checkClient by default; tests give their own.
   */
  clientFor?: (connection: WarehouseConnection, options: ClickHouseCheckOptions) => ClickHouseCheckClient;
}

/**
 * The check's client: clickhouseClient (through the egress guard for a customer's server) on
 * the `default` database, since the app's may not exist yet; every statement names its
 * database. One socket, no more.
 */
export function checkClient(
  connection: WarehouseConnection,
  options: ClickHouseCheckOptions = {},
): ClickHouseCheckClient {
  const lookup = options.lookup ?? (options.resolve ? lookupOver(options.resolve) : undefined);
  return clickhouseClient(
    { ...connection, database: 'default' },
    {
      guard: {
        ...(options.allowPrivateRanges ? { allowPrivateRanges: options.allowPrivateRanges } : {}),
        ...(lookup ? { lookup } : {}),
      },
      requestTimeoutMs: options.requestTimeoutMs ?? 15_000,
      maxOpenConnections: 1,
      ...(options.ca !== undefined ? { ca: options.ca } : {}),
    },
  ) as unknown as ClickHouseCheckClient;
}

const networkCodes = new Set<unknown>([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
  'ECONNABORTED',
  'UND_ERR_SOCKET',
]);
/** ClickHouse's error codes for a refused login: AUTHENTICATION_FAILED, UNKNOWN_USER, WRONG_PASSWORD, REQUIRED_PASSWORD. */
const loginCodes = new Set<unknown>(['516', '192', '193', '194']);
/** TIMEOUT_EXCEEDED, SOCKET_TIMEOUT, NETWORK_ERROR. */
const timeoutCodes = new Set<unknown>(['159', '209', '210']);

/**
 * The failure a ClickHouse client's error means. Messages are written here, never copied from
 * the error: a server's text may echo the user, a host or a query.
 */
export function classifyClickHouseCheckError(error: unknown): {
  code: ClickHouseCheckFailure;
  message: string;
} {
  if (error instanceof InvalidClickHouseConnection)
    return { code: 'warehouse_connection_invalid', message: `The ${error.field} ${error.rule}.` };
  if (isEgressRefusal(error))
    return {
      code: 'egress_address_refused',
      message:
        'The host is, or resolves to, an address that is not public (loopback, private, link-local or reserved): connections there are refused.',
    };
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  const says = (pattern: RegExp) => typeof message === 'string' && pattern.test(message);
  if (loginCodes.has(code))
    return {
      code: 'warehouse_login_failed',
      message: 'The server refused the login: a wrong user or password.',
    };
  if (code === '81') return { code: 'warehouse_database_missing', message: 'The database does not exist.' };
  if (code === '497')
    return {
      code: 'warehouse_permission_denied',
      message:
        'The user may not create, alter, insert into, select from or drop tables in the database (see the grant script).',
    };
  if (
    (typeof code === 'string' &&
      (code.startsWith('ERR_TLS') ||
        code.includes('CERT') ||
        code.includes('SELF_SIGNED') ||
        code.startsWith('UNABLE_TO_VERIFY') ||
        code === 'EPROTO' ||
        code.startsWith('ERR_SSL'))) ||
    says(/SSL|TLS|certificate|wrong version number/i)
  )
    return {
      code: 'warehouse_tls_failed',
      message: 'TLS could not be set up or the certificate was not trusted for this host name.',
    };
  if (networkCodes.has(code) || timeoutCodes.has(code) || says(/timeout|socket hang up/i))
    return {
      code: 'warehouse_connection_refused',
      message: 'The server could not be reached at this host and port (no answer, refused or timed out).',
    };
  return {
    code: 'warehouse_check_failed',
    message: `The server answered with an error${typeof code === 'string' && /^[0-9]{1,4}$/.test(code) ? ` (ClickHouse code ${code})` : ''}.`,
  };
}

/**
 * A name in backquotes. Only names that need no escaping reach it: the database matches
 * clickhouseDatabasePattern (checked before any statement) and the probe's name is hex.
 */
const quoteIdent = (name: string) => `\`${name}\``;

/** The probe table's name: one per check, so two checks at once never share one. */
export const probeTableName = () => `_pipeline_probe_${randomBytes(6).toString('hex')}`;

/**
 * Connects as the warehouse will (through the egress guard for a customer's server), runs
 * SELECT 1, runs `CREATE DATABASE IF NOT EXISTS` as the engine does (creating the database when
 * missing), and proves the user can do what loading needs there: it creates a probe table
 * `_pipeline_probe_<random>`, adds a column, inserts a row, reads it back through a view, and
 * drops the view and the table.
 * Never throws; never returns a server's own text.
 */
export async function checkClickHouseConnection(
  connection: WarehouseConnection,
  options: ClickHouseCheckOptions = {},
): Promise<ClickHouseCheckResult> {
  const fail = (error: unknown): ClickHouseCheckResult => ({
    ok: false,
    ...classifyClickHouseCheckError(error),
  });
  const problem = clickhouseConnectionProblem(connection);
  if (problem && (connection.owner === 'customer' || problem.field === 'database')) return fail(problem);
  let client: ClickHouseCheckClient;
  try {
    client = (options.clientFor ?? checkClient)(connection, options);
  } catch (error) {
    return fail(error);
  }
  const database = quoteIdent(connection.database);
  try {
    const [first] = await (
      await client.query({ query: 'SELECT 1 AS one, version() AS version', format: 'JSONEachRow' })
    ).json<{ one: number; version: string }>();
    const [found] = await (
      await client.query({
        query: 'SELECT count() AS n FROM system.databases WHERE name = {database:String}',
        format: 'JSONEachRow',
        query_params: { database: connection.database },
      })
    ).json<{ n: number | string }>();
    const existed = Number(found?.n ?? 0) > 0;
    try {
      // Always, as the engine runs it before each account's first write: the grant is needed
      // even when the database exists.
      await client.command({ query: `CREATE DATABASE IF NOT EXISTS ${database}` });
    } catch (error) {
      // Not there (or not visible) and not creatable: the database is what is missing.
      if ((error as { code?: unknown }).code === '497' && !existed) return fail({ code: '81' });
      throw error;
    }
    const databaseCreated = !existed;
    const name = probeTableName();
    const probe = `${database}.${quoteIdent(name)}`;
    const view = `${database}.${quoteIdent(`${name}_view`)}`;
    await client.command({ query: `CREATE TABLE ${probe} (id UInt8) ENGINE = MergeTree ORDER BY id` });
    let viewDropped = false;
    let tableDropped = false;
    try {
      await client.command({ query: `ALTER TABLE ${probe} ADD COLUMN IF NOT EXISTS added UInt8 DEFAULT 0` });
      await client.command({ query: `INSERT INTO ${probe} (id, added) VALUES (1, 1)` });
      await client.command({ query: `CREATE OR REPLACE VIEW ${view} AS SELECT id, added FROM ${probe}` });
      const counted = await (
        await client.query({ query: `SELECT count() AS n FROM ${view}`, format: 'JSONEachRow' })
      ).json<{ n: number | string }>();
      // count() answers one row: the probe row was not read back unless it says 1.
      if (!counted.some((row) => Number(row.n) === 1))
        return { ok: false, code: 'warehouse_check_failed', message: 'The server answered with an error.' };
      await client.command({ query: `DROP VIEW ${view}` });
      viewDropped = true;
      await client.command({ query: `DROP TABLE ${probe}` });
      tableDropped = true;
    } finally {
      // After a failure above, the probes go if the user may drop them.
      if (!viewDropped) await client.command({ query: `DROP VIEW IF EXISTS ${view}` }).catch(() => undefined);
      if (!tableDropped)
        await client.command({ query: `DROP TABLE IF EXISTS ${probe}` }).catch(() => undefined);
    }
    return { ok: true, databaseCreated, serverVersion: String(first?.version ?? '') };
  } catch (error) {
    return fail(error);
  } finally {
    await client.close().catch(() => undefined);
  }
}
