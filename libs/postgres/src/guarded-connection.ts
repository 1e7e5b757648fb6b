import { lookup as dnsLookup } from 'node:dns';
import { isIP, Socket } from 'node:net';
import type { ConnectionOptions } from 'node:tls';
import {
  defaultMaxAnswerBytes,
  guardedLookup,
  limitSocket,
  literalRefusal,
  lookupOver,
  parseAllowedRanges,
  type ResolveAll,
} from '@pipeline/egress';
import type { WarehouseConnection, WarehouseTlsMode } from '@pipeline/tenancy';
import { Client, Pool, type ClientConfig, type PoolConfig } from 'pg';

/**
 * A warehouse connection's field that cannot be used. The message names the field and the
 * rule, never the value (a password, or a host an attacker chose, stays out of logs).
 */
export class InvalidWarehouseConnection extends Error {
  readonly code = 'WAREHOUSE_CONNECTION_INVALID';

  constructor(
    readonly field: keyof WarehouseConnection,
    readonly rule: string,
  ) {
    super(`warehouse connection: ${field} ${rule}`);
    this.name = 'InvalidWarehouseConnection';
  }
}

/** A DNS name: labels of letters, digits and inner hyphens, 253 characters at most. */
const hostName =
  /^(?=.{1,253}\.?$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*\.?$/i;
/** Control characters, NUL included: libpq and the server cut strings at NUL. */
const hasControlCharacter = (value: string): boolean =>
  [...value].some((c) => c <= '\u001f' || c === '\u007f');

/**
 * Why a customer's connection fields cannot be used, or undefined. The host is a DNS name or
 * an IP literal and nothing else: no socket path ('/'), no list of hosts (','), no libpq
 * `key=value` or option ('-') can be smuggled in, since node-postgres passes it to the socket
 * as it is and never parses it as a connection string.
 */
export function customerConnectionProblem(
  connection: WarehouseConnection,
): InvalidWarehouseConnection | undefined {
  const { host, port, database, user, password, tlsMode } = connection;
  if (typeof host !== 'string' || !(hostName.test(host) || isIP(host) !== 0))
    return new InvalidWarehouseConnection('host', 'is not a DNS name or an IP address');
  if (!Number.isInteger(port) || port < 1 || port > 65535)
    return new InvalidWarehouseConnection('port', 'is not a port number (1-65535)');
  for (const [field, value] of [
    ['database', database],
    ['user', user],
  ] as const) {
    // PostgreSQL's names hold 63 bytes.
    if (
      typeof value !== 'string' ||
      value.length === 0 ||
      Buffer.byteLength(value) > 63 ||
      hasControlCharacter(value)
    )
      return new InvalidWarehouseConnection(field, 'must be 1-63 bytes without control characters');
  }
  if (typeof password !== 'string' || password.length > 1024 || password.includes('\u0000'))
    return new InvalidWarehouseConnection('password', 'must be at most 1024 characters without NUL');
  if (!(['disable', 'require', 'verify-full'] as const).includes(tlsMode))
    return new InvalidWarehouseConnection('tlsMode', 'must be disable, require or verify-full');
  return undefined;
}

export interface WarehousePoolOptions {
  /** Connections at most; the connection's maxConnections by default. */
  max?: number;
  /** 10 s by default: a customer's server may be far away. */
  connectTimeoutMs?: number;
  /** An idle connection is closed after this; 30 s by default. */
  idleTimeoutMs?: number;
  statementTimeoutMs?: number;
  lockTimeoutMs?: number;
  applicationName?: string;
  /** Trusted CAs for verify-full instead of Node's bundled ones (an operator's private CA). */
  ca?: string | Buffer | readonly (string | Buffer)[];
}

export interface GuardOptions {
  /**
   * A customer's socket that neither sends nor receives a byte for this long is destroyed
   * (ETIMEDOUT): the server-side statement_timeout is the customer's to disarm (a trigger that
   * traps query_canceled, a relay that stops forwarding), so the deadline that holds is ours.
   * Set it above the statement timeout; 0 or unset: none.
   */
  readDeadlineMs?: number;
  /**
   * Bytes a customer's server may send in answer to one request (from one write of ours to the
   * next) before its socket is destroyed: node-postgres buffers a message of any declared
   * length, and a hostile server's rows would otherwise fill the process's memory.
   */
  maxAnswerBytes?: number;
  /** Operator-allowed ranges (EGRESS_ALLOW_PRIVATE_RANGES); tests allow loopback with it. */
  allowPrivateRanges?: readonly string[];
  /** Name resolution; the system resolver by default (tests give their own). */
  lookup?: typeof dnsLookup;
  /** Name resolution as the egress checks of saved URLs take it; used when `lookup` is absent. */
  resolve?: ResolveAll;
}

/** node-postgres's TLS settings for a mode: libpq's sslmode semantics, always with SNI. */
function tlsSettings(mode: WarehouseTlsMode, ca: WarehousePoolOptions['ca']): ClientConfig['ssl'] {
  if (mode === 'disable') return false;
  // node-postgres sets the server name (SNI) to the host it was given, the customer's name,
  // never the address the guard picked; verify-full checks the certificate against it.
  const settings: ConnectionOptions = { rejectUnauthorized: mode === 'verify-full' };
  if (ca !== undefined) settings.ca = ca as ConnectionOptions['ca'];
  return settings;
}

/**
 * The fields node-postgres needs, every one set: an unset one falls back to PG* environment
 * variables and ~/.pgpass (the operator's own credentials, which must never go to a
 * customer's server). The password is a function for the same reason: an empty one would
 * fall back to PGPASSWORD.
 */
function clientConfig(connection: WarehouseConnection, options: WarehousePoolOptions): ClientConfig {
  const { password } = connection;
  return {
    host: connection.host,
    port: connection.port,
    database: connection.database,
    user: connection.user,
    password: () => password,
    ssl: tlsSettings(connection.tlsMode, options.ca),
    application_name: options.applicationName ?? 'pipeline',
    connectionTimeoutMillis: options.connectTimeoutMs ?? 10_000,
    ...(options.statementTimeoutMs ? { statement_timeout: options.statementTimeoutMs } : {}),
    ...(options.lockTimeoutMs ? { lock_timeout: options.lockTimeoutMs } : {}),
  };
}

/**
 * A socket factory for node-postgres whose every connect checks the address: an IP literal
 * before connecting, a name through a lookup that resolves all its addresses and refuses them
 * all if one is refused, so the socket connects only to an address the check saw (no DNS
 * rebinding between a check and the connect). A socket path is refused outright.
 */
export function guardedSocketFactory(options: GuardOptions = {}): () => Socket {
  const allowed = parseAllowedRanges(options.allowPrivateRanges ?? []);
  const lookup = guardedLookup(
    allowed,
    options.lookup ?? (options.resolve ? lookupOver(options.resolve) : dnsLookup),
  );
  return () => {
    const socket = new Socket();
    const connect = socket.connect.bind(socket) as (options: {
      port: number;
      host: string;
      lookup: typeof lookup;
    }) => Socket;
    const refuse = (error: Error): Socket => {
      // node-postgres listens for 'error' right after it calls connect.
      process.nextTick(() => socket.destroy(error));
      return socket;
    };
    socket.connect = ((port: unknown, host: unknown) => {
      if (typeof port !== 'number' || typeof host !== 'string')
        return refuse(new InvalidWarehouseConnection('host', 'is not a TCP host (socket paths are refused)'));
      const refused = literalRefusal(host, allowed);
      if (refused) return refuse(refused);
      return connect({ port, host, lookup });
    }) as Socket['connect'];
    return socket;
  };
}

/**
 * The limits of limitSocket on a customer's connection once it is logged in (before login,
 * connectTimeoutMs bounds the wait), on the stream node-postgres reads: the TLS socket when
 * there is one, since the raw socket under it sees no activity of its own.
 */
function bounded(client: Client, options: GuardOptions): void {
  const socket = (client as unknown as { connection: { stream: Socket } }).connection.stream;
  limitSocket(socket, {
    idleMs: options.readDeadlineMs ?? 0,
    maxAnswerBytes: options.maxAnswerBytes ?? defaultMaxAnswerBytes,
  });
}

function checked(connection: WarehouseConnection): void {
  if (connection.owner !== 'customer') return;
  const problem = customerConnectionProblem(connection);
  if (problem) throw problem;
}

/**
 * One client to a warehouse, not yet connected: through the guard for a customer's
 * warehouse, as configured for the platform's.
 */
export function warehouseClient(
  connection: WarehouseConnection,
  options: WarehousePoolOptions & GuardOptions = {},
): Client {
  checked(connection);
  const client = new Client({
    ...clientConfig(connection, options),
    ...(connection.owner === 'customer' ? { stream: guardedSocketFactory(options) } : {}),
  });
  if (connection.owner === 'customer') client.once('connect', () => bounded(client, options));
  return client;
}

/**
 * The pool of a warehouse. A customer's: every new connection (not only the first) resolves
 * the host and checks each address, since a name's addresses may change while the pool lives.
 * The platform's: connected as the operator configured it.
 */
/**
 * A lost connection must not end the process. node-postgres emits 'error' on the client as well
 * as failing its query, and pg-pool listens only while a client is idle: a server restarted
 * under a checked-out client (a COPY running, a transaction between statements) would throw
 * from an 'error' event nobody hears. The failed query carries the error to its caller, and
 * the client, no longer queryable, is not given back to the pool.
 */
export function quietOnLostConnections(pool: Pool): void {
  pool.on('error', () => undefined);
  pool.on('connect', (client) => {
    client.on('error', () => undefined);
  });
}

export function warehouseConnectionPool(
  connection: WarehouseConnection,
  options: WarehousePoolOptions & GuardOptions = {},
): Pool {
  checked(connection);
  const config: PoolConfig = {
    ...clientConfig(connection, options),
    max: options.max ?? connection.maxConnections,
    idleTimeoutMillis: options.idleTimeoutMs ?? 30_000,
    // Idle connections do not keep a process that is done (a CLI command) from exiting.
    allowExitOnIdle: true,
    ...(connection.owner === 'customer' ? { stream: guardedSocketFactory(options) } : {}),
  };
  const pool = new Pool(config);
  quietOnLostConnections(pool);
  if (connection.owner === 'customer') pool.on('connect', (client) => bounded(client, options));
  return pool;
}
