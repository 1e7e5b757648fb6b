import type { lookup as dnsLookup, LookupAddress } from 'node:dns';
import { Agent as HttpAgent, createServer as createHttpServer } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import { createServer, type Server, type Socket } from 'node:net';
import { ClickHouseLogLevel } from '@clickhouse/client';
import { isEgressRefusal } from '@pipeline/egress';
import type { WarehouseConnection } from '@pipeline/tenancy';
import fc from 'fast-check';
import {
  clickhouseClient,
  clickhouseClientConfig,
  customerConnectionProblem,
  InvalidClickHouseConnection,
} from './clickhouse-client';
import { clickhouseConnectionProblem } from './clickhouse-connection-check';
import { useClickHouseTestServer } from './testing';

const server = useClickHouseTestServer();

const options = { requestTimeoutMs: 5000, maxOpenConnections: 2 };

function connection(fields: Partial<WarehouseConnection>): WarehouseConnection {
  return {
    warehouseId: 'wh-1',
    engine: 'clickhouse' as WarehouseConnection['engine'],
    host: '127.0.0.1',
    port: server.current.port,
    database: 'default',
    user: 'default',
    password: '',
    tlsMode: 'disable',
    owner: 'customer',
    maxConnections: 2,
    ...fields,
  };
}

/** A TCP listener on 127.0.0.1 that counts the connections it is offered. */
async function countingListener(): Promise<{
  port: number;
  connections: () => number;
  close: () => Promise<void>;
}> {
  let count = 0;
  const listener: Server = createServer((socket) => {
    count += 1;
    socket.destroy();
  });
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  const address = listener.address();
  if (typeof address !== 'object' || !address) throw new Error('no port');
  return {
    port: address.port,
    connections: () => count,
    close: () => new Promise((resolve) => listener.close(() => resolve())),
  };
}

/** A resolver that answers every name with the given addresses. */
function answering(addresses: string[]) {
  return ((_host: string, _options: unknown, callback: (e: Error | null, a: LookupAddress[]) => void) =>
    callback(
      null,
      addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })),
    )) as unknown as typeof dnsLookup;
}

describe('clickhouseClient', () => {
  test("a platform connection reaches the server and reads with the pipeline's settings", async () => {
    const client = clickhouseClient(connection({ owner: 'platform' }), options);
    try {
      const result = await client.query({
        query: 'SELECT toUInt64(18446744073709551615) AS big',
        format: 'JSONEachRow',
      });
      expect(await result.json()).toEqual([{ big: '18446744073709551615' }]);
    } finally {
      await client.close();
    }
  });

  test('a customer connection to an allowed range goes through the guard', async () => {
    const client = clickhouseClient(connection({}), {
      ...options,
      guard: { allowPrivateRanges: ['127.0.0.0/8'] },
    });
    try {
      expect(await client.ping()).toEqual({ success: true });
    } finally {
      await client.close();
    }
  });

  test.each(['127.0.0.1', 'localhost', '::1'])(
    'a customer connection to %s is refused before any connection',
    async (host) => {
      const listener = await countingListener();
      const client = clickhouseClient(connection({ host, port: listener.port }), options);
      try {
        const result = await client.ping();
        expect(result.success).toBe(false);
        expect(isEgressRefusal((result as { error: unknown }).error)).toBe(true);
        expect(listener.connections()).toBe(0);
      } finally {
        await client.close();
        await listener.close();
      }
    },
  );

  test('hostile hosts never reach a connection (property)', async () => {
    const listener = await countingListener();
    const hostileAddress = fc.oneof(
      fc.ipV4().filter((a) => a.startsWith('127.')),
      fc.constantFrom(
        '127.0.0.1',
        '::1',
        '::ffff:127.0.0.1',
        '10.0.0.1',
        '10.255.1.2',
        '169.254.169.254',
        '100.64.0.1',
        '172.16.5.4',
        '192.168.1.1',
        'fd00::1',
        'fe80::1',
        '0.0.0.0',
      ),
    );
    try {
      await fc.assert(
        fc.asyncProperty(hostileAddress, fc.boolean(), async (address, asName) => {
          // As a literal host, or as what a customer's DNS name resolves to.
          const host = asName ? 'warehouse.customer.example' : address;
          const client = clickhouseClient(connection({ host, port: listener.port }), {
            ...options,
            guard: { lookup: answering([address]) },
          });
          try {
            const result = await client.ping();
            expect(result.success).toBe(false);
            expect(isEgressRefusal((result as { error: unknown }).error)).toBe(true);
          } finally {
            await client.close();
          }
        }),
        { numRuns: 60 },
      );
      expect(listener.connections()).toBe(0);
    } finally {
      await listener.close();
    }
  });

  test('a customer host that is not a DNS name or an IP address is refused by field', () => {
    for (const host of ['a/b', 'user@host', 'host:1', '', 'a..b', 'ho st']) {
      expect(() => clickhouseClient(connection({ host }), options)).toThrow(InvalidClickHouseConnection);
    }
  });
});

/** A valid customer connection that needs no server (pure tests). */
const fields = (over: Partial<WarehouseConnection> = {}): WarehouseConnection => ({
  warehouseId: 'wh-1',
  engine: 'clickhouse' as WarehouseConnection['engine'],
  host: 'ch.example.com',
  port: 8443,
  database: 'analytics',
  user: 'loader',
  password: 'secret',
  tlsMode: 'verify-full',
  owner: 'customer',
  maxConnections: 2,
  ...over,
});

const problemOf = (over: Partial<WarehouseConnection>) => {
  const problem = customerConnectionProblem(fields(over));
  return problem && { field: problem.field, message: problem.message };
};

/**
 * A ClickHouse look-alike that fights back: it answers the headers at once, then trickles the
 * body and never ends it, or sends far more than any answer should hold.
 */
async function hostileHttpServer(): Promise<{ port: number; close: () => Promise<void> }> {
  const server = createHttpServer((request, response) => {
    response.writeHead(200, {
      'Content-Type': 'application/json; charset=UTF-8',
      'X-ClickHouse-Format': 'JSONEachRow',
    });
    if (request.url?.includes('huge')) {
      const chunk = Buffer.alloc(64 * 1024, 'x');
      for (let i = 0; i < 64; i += 1) response.write(chunk);
      response.end();
      return;
    }
    response.write('{"n":');
    // ...and nothing more: the request timeout stopped counting at the headers.
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (typeof address !== 'object' || !address) throw new Error('no port');
  return {
    port: address.port,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describe("a customer's server that holds or floods an answer", () => {
  const guard = { allowPrivateRanges: ['127.0.0.0/8'] };
  let hostile: { port: number; close: () => Promise<void> };
  beforeAll(async () => {
    hostile = await hostileHttpServer();
  });
  afterAll(async () => {
    await hostile.close();
  });

  test('a body that never ends fails once the socket is idle for the request timeout', async () => {
    const client = clickhouseClient(connection({ port: hostile.port }), {
      ...options,
      requestTimeoutMs: 800,
      guard,
    });
    try {
      const started = Date.now();
      const error = await client
        .query({ query: 'SELECT 1 AS n', format: 'JSONEachRow' })
        .then((result) => result.json())
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      // Node's HTTP client reports the socket we destroyed as the answer aborted: a network
      // error the engine reads as unavailable, so the rows are held, never dead-lettered.
      expect(error).toMatchObject({ code: 'ECONNRESET', message: 'aborted' });
      expect(Date.now() - started).toBeGreaterThanOrEqual(700);
    } finally {
      await client.close();
    }
  });

  test('an answer over the cap is cut off, before the client buffers it all', async () => {
    const client = clickhouseClient(connection({ port: hostile.port }), {
      ...options,
      guard: { ...guard, maxAnswerBytes: 1_000_000 },
    });
    try {
      const error = await client
        .query({ query: 'SELECT huge', format: 'JSONEachRow', query_id: 'huge' })
        .then((result) => result.text())
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      expect(error).toMatchObject({ code: 'ECONNRESET', message: 'aborted' });
    } finally {
      await client.close();
    }
  });

  test('the same answer is read whole under a cap above it', async () => {
    const client = clickhouseClient(connection({ port: hostile.port }), {
      ...options,
      guard: { ...guard, maxAnswerBytes: 8_000_000 },
    });
    try {
      const result = await client.query({ query: 'SELECT huge', format: 'JSONEachRow', query_id: 'huge' });
      expect((await result.text()).length).toBe(64 * 64 * 1024);
    } finally {
      await client.close();
    }
  });
});

describe('InvalidClickHouseConnection', () => {
  test('has its code, name, field, rule and a message without the value', () => {
    const error = new InvalidClickHouseConnection('host', 'is odd');
    expect(error).toBeInstanceOf(Error);
    expect({ code: error.code, name: error.name, field: error.field, rule: error.rule }).toEqual({
      code: 'WAREHOUSE_CONNECTION_INVALID',
      name: 'InvalidClickHouseConnection',
      field: 'host',
      rule: 'is odd',
    });
    expect(error.message).toBe('warehouse connection: host is odd');
  });
});

describe('customerConnectionProblem (each field, each boundary)', () => {
  const host = { field: 'host', message: 'warehouse connection: host is not a DNS name or an IP address' };
  const port = { field: 'port', message: 'warehouse connection: port is not a port number (1-65535)' };
  const text = (field: string) => ({
    field,
    message: `warehouse connection: ${field} must be 1-255 characters without control characters`,
  });
  const password = {
    field: 'password',
    message: 'warehouse connection: password must be at most 1024 characters without control characters',
  };
  const tlsMode = {
    field: 'tlsMode',
    message: 'warehouse connection: tlsMode must be disable, require or verify-full',
  };
  const label = 'a'.repeat(63);
  // 4 labels of 63 and 3 dots: 255 characters; 3 labels and "b".repeat(61): 253.
  const name253 = `${label}.${label}.${label}.${'b'.repeat(61)}`;
  const name255 = `${label}.${label}.${label}.${label}`;

  test.each([
    ['a valid connection', {}, undefined],
    ['a one-letter host', { host: 'a' }, undefined],
    ['one-letter labels', { host: 'a.b.c' }, undefined],
    ['a host with a trailing dot', { host: 'ch.example.com.' }, undefined],
    ['a 253-character name', { host: name253 }, undefined],
    ['a 253-character name with its trailing dot', { host: `${name253}.` }, undefined],
    ['a 255-character name', { host: name255 }, host],
    ['a 64-character label', { host: `${'a'.repeat(64)}.com` }, host],
    ['an IPv4 literal', { host: '93.184.215.14' }, undefined],
    ['an IPv6 literal', { host: '2606:2800:220:1::1' }, undefined],
    ['a path', { host: 'a/b' }, host],
    ['user info', { host: 'user@host' }, host],
    ['a port in the host', { host: 'host:1' }, host],
    ['an empty host', { host: '' }, host],
    ['a number as host', { host: 123 as never }, host],
    ['no host', { host: undefined as never }, host],
    ['port 0', { port: 0 }, port],
    ['port 1', { port: 1 }, undefined],
    ['port 65535', { port: 65535 }, undefined],
    ['port 65536', { port: 65536 }, port],
    ['port 1.5', { port: 1.5 }, port],
    ['port -1', { port: -1 }, port],
    ['a port as text', { port: '8443' as never }, port],
    ['an empty database', { database: '' }, text('database')],
    ['a 255-character database', { database: 'd'.repeat(255) }, undefined],
    ['a 256-character database', { database: 'd'.repeat(256) }, text('database')],
    ['a database that is no text', { database: 5 as never }, text('database')],
    ['an empty user', { user: '' }, text('user')],
    ['a 255-character user', { user: 'u'.repeat(255) }, undefined],
    ['a 256-character user', { user: 'u'.repeat(256) }, text('user')],
    ['a user that is no text', { user: 5 as never }, text('user')],
    ['a user with \\u001f', { user: 'lo\u001fader' }, text('user')],
    ['a user with \\u0001', { user: 'lo\u0001ader' }, text('user')],
    ['a user with \\u007f', { user: 'lo\u007fader' }, text('user')],
    ['a user with a space', { user: 'lo ader' }, undefined],
    ['a user with \\u0080', { user: 'lo\u0080ader' }, undefined],
    ['a database with \\u001f', { database: 'ana\u001flytics' }, text('database')],
    ['a database with \\u007f', { database: 'ana\u007flytics' }, text('database')],
    ['a database with a space', { database: 'ana lytics' }, undefined],
    ['an empty password', { password: '' }, undefined],
    ['a 1024-character password', { password: 'p'.repeat(1024) }, undefined],
    ['a 1025-character password', { password: 'p'.repeat(1025) }, password],
    ['a password that is no text', { password: undefined as never }, password],
    ['a password with \\u001f', { password: 'pa\u001fss' }, password],
    ['a password with \\u007f', { password: 'pa\u007fss' }, password],
    ['a password with \\u0000', { password: 'pa\u0000ss' }, password],
    ['a password with a space', { password: 'pa ss' }, undefined],
    ['tlsMode disable', { tlsMode: 'disable' }, undefined],
    ['tlsMode require', { tlsMode: 'require' }, undefined],
    ['tlsMode prefer', { tlsMode: 'prefer' as never }, tlsMode],
  ] as const)('%s', (_label, over, expected) => {
    expect(problemOf(over as Partial<WarehouseConnection>)).toEqual(expected);
  });

  test('the first refused field is the one named', () => {
    expect(problemOf({ port: 0, user: '' })?.field).toBe('port');
    expect(problemOf({ database: '', user: '' })?.field).toBe('database');
  });
});

describe("the check's own field rules share the host, port and tlsMode rules", () => {
  const label = 'a'.repeat(63);
  test.each([
    [{ host: 'a.b.c' }, undefined],
    [{ host: `${'a'.repeat(64)}.com` }, 'host'],
    [{ host: `${label}.${label}.${label}.${label}` }, 'host'],
    [{ host: `${label}.${label}.${label}.${'b'.repeat(61)}.` }, undefined],
    [{ host: 123 as never }, 'host'],
    [{ port: 0 }, 'port'],
    [{ port: 1 }, undefined],
    [{ port: 65535 }, undefined],
    [{ port: 65536 }, 'port'],
    [{ port: 1.5 }, 'port'],
    [{ tlsMode: 'prefer' as never }, 'tlsMode'],
  ] as const)('%j', (over, field) => {
    const connection = fields(over as Partial<WarehouseConnection>);
    expect(clickhouseConnectionProblem(connection)?.field).toBe(field);
    expect(customerConnectionProblem(connection)?.field).toBe(field);
  });
});

describe('clickhouseClientConfig', () => {
  const base = { requestTimeoutMs: 4_000, maxOpenConnections: 3 };

  test('a customer connection with a field that cannot be used is refused, a platform one is not', () => {
    expect(() => clickhouseClientConfig(fields({ password: 'p'.repeat(1025) }), base)).toThrow(
      expect.objectContaining({ field: 'password', code: 'WAREHOUSE_CONNECTION_INVALID' }),
    );
    expect(() =>
      clickhouseClientConfig(fields({ owner: 'platform', password: 'p'.repeat(1025) }), base),
    ).not.toThrow();
  });

  test('verify-full: https, a certificate check, the CA passed through, and the settings', () => {
    const config = clickhouseClientConfig(fields({ port: 9440 }), { ...base, ca: 'PEM' });
    const agent = config.http_agent as HttpsAgent;
    expect(agent).toBeInstanceOf(HttpsAgent);
    expect(agent.options).toMatchObject({
      rejectUnauthorized: true,
      ca: 'PEM',
      keepAlive: true,
      maxSockets: 3,
    });
    expect(agent.maxSockets).toBe(3);
    expect((agent as unknown as { keepAlive: boolean }).keepAlive).toBe(true);
    const { http_agent: _agent, ...rest } = config;
    expect(rest).toEqual({
      url: 'https://ch.example.com:9440',
      database: 'analytics',
      username: 'loader',
      password: 'secret',
      application: 'pipeline',
      request_timeout: 4_000,
      max_open_connections: 3,
      keep_alive: { enabled: true, idle_socket_ttl: 2_500 },
      compression: { request: false, response: false },
      set_basic_auth_header: true,
      log: { level: ClickHouseLogLevel.OFF },
      clickhouse_settings: {
        date_time_input_format: 'best_effort',
        output_format_json_quote_64bit_integers: 1,
      },
    });
  });

  test('require: https without the certificate check; no CA unless given', () => {
    const config = clickhouseClientConfig(fields({ tlsMode: 'require' }), { ...base, idleSocketTtlMs: 700 });
    const agent = config.http_agent as HttpsAgent;
    expect(agent).toBeInstanceOf(HttpsAgent);
    expect(agent.options.rejectUnauthorized).toBe(false);
    expect('ca' in agent.options).toBe(false);
    expect(config.url).toBe('https://ch.example.com:8443');
    expect(config.keep_alive).toEqual({ enabled: true, idle_socket_ttl: 700 });
  });

  test('disable: plain http, an IPv6 host in brackets', () => {
    const config = clickhouseClientConfig(
      fields({ tlsMode: 'disable', host: '2606:2800:220:1::1', port: 8123 }),
      base,
    );
    expect(config.http_agent).toBeInstanceOf(HttpAgent);
    expect(config.http_agent).not.toBeInstanceOf(HttpsAgent);
    expect((config.http_agent as HttpAgent).maxSockets).toBe(3);
    expect(config.url).toBe('http://[2606:2800:220:1::1]:8123');
  });

  /** Calls the agent's createConnection and waits for its callback or its socket's error. */
  function connectThrough(agent: HttpAgent, options: Record<string, unknown>) {
    return new Promise<{ error: unknown; returned: unknown }>((resolve) => {
      const create = (
        agent as unknown as {
          createConnection: (o: unknown, cb: (e: Error | null) => void) => Socket | undefined;
        }
      ).createConnection;
      let refusal: Error | null = null;
      const returned = create(options, (error) => {
        refusal = error;
      });
      if (refusal) {
        resolve({ error: refusal, returned });
        return;
      }
      (returned as Socket).once('error', (error) => {
        (returned as Socket).destroy();
        resolve({ error, returned: 'socket' });
      });
    });
  }

  test.each(['disable', 'verify-full'] as const)(
    '%s: the guarded agent refuses an IP literal and a socket path before connecting',
    async (tlsMode) => {
      const asked: string[] = [];
      const lookup = ((host: string, _o: unknown, cb: (e: Error | null, a: LookupAddress[]) => void) => {
        asked.push(host);
        cb(null, [{ address: '93.184.215.14', family: 4 }]);
      }) as unknown as typeof dnsLookup;
      const agent = clickhouseClientConfig(fields({ tlsMode }), { ...base, guard: { lookup } })
        .http_agent as HttpAgent;
      const literal = await connectThrough(agent, { host: '10.1.2.3', port: 8443 });
      expect(isEgressRefusal(literal.error)).toBe(true);
      expect(literal.returned).toBeUndefined();
      const socket = await connectThrough(agent, {
        host: 'ch.example.com',
        port: 8443,
        socketPath: '/tmp/ch.sock',
      });
      expect(socket.error).toBeInstanceOf(InvalidClickHouseConnection);
      expect((socket.error as Error).message).toBe(
        'warehouse connection: host is not a TCP host (socket paths are refused)',
      );
      expect(socket.returned).toBeUndefined();
      expect(asked).toEqual([]);
    },
  );

  test('the guarded agent resolves a name through the given lookup and refuses a private answer', async () => {
    const asked: string[] = [];
    const lookup = ((host: string, _o: unknown, cb: (e: Error | null, a: LookupAddress[]) => void) => {
      asked.push(host);
      cb(null, [{ address: '10.0.0.9', family: 4 }]);
    }) as unknown as typeof dnsLookup;
    const agent = clickhouseClientConfig(fields({ tlsMode: 'disable' }), { ...base, guard: { lookup } })
      .http_agent as HttpAgent;
    const result = await connectThrough(agent, { host: 'ch.example.com', port: 8123 });
    expect(result.returned).toBe('socket');
    expect(isEgressRefusal(result.error)).toBe(true);
    expect(asked).toEqual(['ch.example.com']);
  });

  test('a platform connection has no guard: its agent connects as Node does', () => {
    const agent = clickhouseClientConfig(fields({ owner: 'platform', tlsMode: 'disable' }), base).http_agent;
    expect(Object.prototype.hasOwnProperty.call(agent, 'createConnection')).toBe(false);
    const guarded = clickhouseClientConfig(fields({ tlsMode: 'disable' }), base).http_agent;
    expect(Object.prototype.hasOwnProperty.call(guarded, 'createConnection')).toBe(true);
  });
});
