import { lookup as dnsLookup } from 'node:dns';
import { Agent as HttpAgent, type AgentOptions } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import { isIP, type Socket } from 'node:net';
import {
  ClickHouseLogLevel,
  createClient,
  type ClickHouseClient,
  type ClickHouseClientConfigOptions,
} from '@clickhouse/client';
import {
  defaultMaxAnswerBytes,
  guardedLookup,
  limitSocket,
  literalRefusal,
  parseAllowedRanges,
  type AllowedRange,
  type SocketLimits,
} from '@pipeline/egress';
import type { WarehouseConnection } from '@pipeline/tenancy';

/**
 * A warehouse connection's field that cannot be used. The message names the field and the
 * rule, never the value (a password, or a host an attacker chose, stays out of logs).
 */
export class InvalidClickHouseConnection extends Error {
  readonly code = 'WAREHOUSE_CONNECTION_INVALID';

  constructor(
    readonly field: keyof WarehouseConnection,
    readonly rule: string,
  ) {
    super(`warehouse connection: ${field} ${rule}`);
    this.name = 'InvalidClickHouseConnection';
  }
}

export interface ClickHouseGuardOptions {
  /** Operator-allowed ranges (EGRESS_ALLOW_PRIVATE_RANGES); tests allow loopback with it. */
  allowPrivateRanges?: readonly string[];
  /** Name resolution; the system resolver by default (tests give their own). */
  lookup?: typeof dnsLookup;
  /**
   * Bytes one answer of a customer's server may hold (64 MiB by default): the client would
   * buffer a whole JSON answer of any size.
   */
  maxAnswerBytes?: number;
}

export interface ClickHouseClientOptions {
  /** For a customer's server: what the egress guard lets through besides public addresses. */
  guard?: ClickHouseGuardOptions;
  /** A request (connect, send, answer) fails after this. */
  requestTimeoutMs: number;
  /** An idle kept-alive socket is dropped after this; below the server's 10 s keep-alive. */
  idleSocketTtlMs?: number;
  /** Sockets to the server at most. */
  maxOpenConnections: number;
  /** Trusted CAs for verify-full instead of Node's bundled ones (an operator's private CA). */
  ca?: string | Buffer | readonly (string | Buffer)[];
}

/** A DNS name: labels of letters, digits and inner hyphens, 253 characters at most. */
const hostName =
  /^(?=.{1,253}\.?$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*\.?$/i;
/** A host field that is a DNS name or an IP literal, and nothing else. */
export const isHostOrAddress = (host: unknown): boolean =>
  typeof host === 'string' && (hostName.test(host) || isIP(host) !== 0);
export const hasControlCharacter = (value: string): boolean =>
  [...value].some((c) => c <= '\u001f' || c === '\u007f');

/**
 * Why a customer's connection fields cannot be used, or undefined. The host is a DNS name or an
 * IP literal and nothing else: no path, user info or port can be smuggled into the URL.
 */
export function customerConnectionProblem(
  connection: WarehouseConnection,
): InvalidClickHouseConnection | undefined {
  const { host, port, database, user, password, tlsMode } = connection;
  if (!isHostOrAddress(host))
    return new InvalidClickHouseConnection('host', 'is not a DNS name or an IP address');
  if (!Number.isInteger(port) || port < 1 || port > 65535)
    return new InvalidClickHouseConnection('port', 'is not a port number (1-65535)');
  for (const [field, value] of [
    ['database', database],
    ['user', user],
  ] as const) {
    if (typeof value !== 'string' || value.length === 0 || value.length > 255 || hasControlCharacter(value))
      return new InvalidClickHouseConnection(field, 'must be 1-255 characters without control characters');
  }
  if (typeof password !== 'string' || password.length > 1024 || hasControlCharacter(password))
    return new InvalidClickHouseConnection(
      'password',
      'must be at most 1024 characters without control characters',
    );
  if (!(['disable', 'require', 'verify-full'] as const).includes(tlsMode))
    return new InvalidClickHouseConnection('tlsMode', 'must be disable, require or verify-full');
  return undefined;
}

type CreateConnection = (
  options: Record<string, unknown>,
  callback: (error: Error | null, socket?: Socket) => void,
) => Socket | undefined;

/**
 * An agent whose every connect checks the address: an IP literal before connecting (Node
 * skips the lookup for one), a name through a lookup that resolves all its addresses and
 * refuses them all if one is refused, so the socket connects only to an address the check saw.
 * TLS keeps the host name for SNI and the certificate check, never the address. Each socket
 * gets limitSocket's limits: the client's request_timeout stops counting once the answer's
 * headers arrive, so a server that trickles the body would otherwise hold the request forever.
 */
function guardedAgent<A extends HttpAgent>(
  agent: A,
  allowed: readonly AllowedRange[],
  lookup: typeof dnsLookup,
  limits: SocketLimits,
): A {
  const checkedLookup = guardedLookup(allowed, lookup);
  const create = (agent as unknown as { createConnection: CreateConnection }).createConnection.bind(agent);
  (agent as unknown as { createConnection: CreateConnection }).createConnection = (options, callback) => {
    // Node always sets the host (localhost by default); no host is no IP literal either way.
    const refused = literalRefusal(String(options.host), allowed);
    if (refused) {
      callback(refused);
      return undefined;
    }
    if (typeof options.socketPath === 'string') {
      callback(new InvalidClickHouseConnection('host', 'is not a TCP host (socket paths are refused)'));
      return undefined;
    }
    const socket = create({ ...options, lookup: checkedLookup }, callback);
    if (socket) limitSocket(socket, limits);
    return socket;
  };
  return agent;
}

/**
 * The client of a ClickHouse warehouse over HTTP(S). tlsMode as libpq's sslmode: `disable`
 * plain HTTP, `require` TLS without checking the certificate, `verify-full` TLS checking the
 * certificate and the host name. A customer's server is reached only through the egress guard
 * (loopback, private, link-local and metadata addresses refused before any connection).
 */
export function clickhouseClient(
  connection: WarehouseConnection,
  options: ClickHouseClientOptions,
): ClickHouseClient {
  return createClient(clickhouseClientConfig(connection, options));
}

/** What clickhouseClient gives createClient: the URL, the (guarded) agent and the settings. */
export function clickhouseClientConfig(
  connection: WarehouseConnection,
  options: ClickHouseClientOptions,
): ClickHouseClientConfigOptions {
  if (connection.owner === 'customer') {
    const problem = customerConnectionProblem(connection);
    if (problem) throw problem;
  }
  const secure = connection.tlsMode !== 'disable';
  const agentOptions: AgentOptions = {
    keepAlive: true,
    maxSockets: options.maxOpenConnections,
  };
  const agent = secure
    ? new HttpsAgent({
        ...agentOptions,
        rejectUnauthorized: connection.tlsMode === 'verify-full',
        ...(options.ca !== undefined ? { ca: options.ca as string | Buffer | (string | Buffer)[] } : {}),
      })
    : new HttpAgent(agentOptions);
  const httpAgent =
    connection.owner === 'customer'
      ? guardedAgent(
          agent,
          parseAllowedRanges(options.guard?.allowPrivateRanges ?? []),
          options.guard?.lookup ?? dnsLookup,
          {
            idleMs: options.requestTimeoutMs,
            maxAnswerBytes: options.guard?.maxAnswerBytes ?? defaultMaxAnswerBytes,
          },
        )
      : agent;
  const host = isIP(connection.host) === 6 ? `[${connection.host}]` : connection.host;
  return {
    url: `${secure ? 'https' : 'http'}://${host}:${connection.port}`,
    database: connection.database,
    username: connection.user,
    password: connection.password,
    application: 'pipeline',
    request_timeout: options.requestTimeoutMs,
    max_open_connections: options.maxOpenConnections,
    keep_alive: { enabled: true, idle_socket_ttl: options.idleSocketTtlMs ?? 2_500 },
    // Batches are small and often local; compression costs CPU on both sides for little.
    compression: { request: false, response: false },
    http_agent: httpAgent,
    set_basic_auth_header: true,
    // Every failure is thrown to the engine, which classifies and logs it with the password
    // redacted; the client's own log would print it again, unredacted query text included.
    log: { level: ClickHouseLogLevel.OFF },
    clickhouse_settings: {
      // DateTime64 text such as 2024-01-02T03:04:05.123456Z parses as sent.
      date_time_input_format: 'best_effort',
      // UInt64/Int64 as JSON strings: a JavaScript number loses digits above 2^53.
      output_format_json_quote_64bit_integers: 1,
    },
  };
}
