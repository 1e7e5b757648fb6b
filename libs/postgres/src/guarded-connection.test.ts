import { execFile } from 'node:child_process';
import type { LookupAddress, lookup as dnsLookup } from 'node:dns';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createServer, type Server, type Socket } from 'node:net';
import { loadConfig } from '@pipeline/config';
import { AnswerTooLarge, ConnectionIdle, EgressRefused } from '@pipeline/egress';
import type { WarehouseConnection } from '@pipeline/tenancy';
import fc from 'fast-check';
import {
  checkWarehouseConnection,
  customerConnectionProblem,
  guardedSocketFactory,
  InvalidWarehouseConnection,
  createScratchDatabase,
  postgresConfigSchema,
  warehouseClient,
  warehouseConnectionPool,
  type ScratchDatabase,
} from './index';
import { Client } from 'pg';
import { useTestClusters, type TestCluster } from './testing';

// Real sockets and servers: a TCP listener that counts connections stands in for what must
// never be reached, the machine's PostgreSQL and extra clusters for what must work.
const { DATABASE_URL } = loadConfig(postgresConfigSchema, process.env);
const local = new URL(DATABASE_URL);
const clusters = useTestClusters();

const customer = (fields: Partial<WarehouseConnection> = {}): WarehouseConnection => ({
  warehouseId: 'wh_customer',
  engine: 'postgres',
  host: 'db.example.com',
  port: 5432,
  database: 'analytics',
  user: 'loader',
  password: 'Pa55-never-shown-7f3a',
  tlsMode: 'disable',
  owner: 'customer',
  maxConnections: 3,
  ...fields,
});

const run = (file: string, args: string[]) =>
  new Promise<void>((resolve, reject) =>
    execFile(file, args, { timeout: 30_000 }, (error, _out, err) =>
      error ? reject(new Error(`${file}: ${error.message}\n${String(err)}`)) : resolve(),
    ),
  );

/** A lookup answering every name with `addresses` (and counting calls), as a resolver would. */
function fixedLookup(answer: () => string[]): { lookup: typeof dnsLookup; calls: string[] } {
  const calls: string[] = [];
  const lookup = ((hostname: string, _options: unknown, callback: (e: null, a: LookupAddress[]) => void) => {
    calls.push(hostname);
    callback(
      null,
      answer().map((address) => ({ address, family: address.includes(':') ? 6 : 4 })),
    );
  }) as unknown as typeof dnsLookup;
  return { lookup, calls };
}

/** A TCP listener on 127.0.0.1 that counts who connects (and hangs up on them). */
let listener: Server;
let accepted = 0;
let listenerPort = 0;

beforeAll(async () => {
  listener = createServer((socket: Socket) => {
    accepted += 1;
    socket.destroy();
  });
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  listenerPort = (listener.address() as { port: number }).port;
});

afterAll(async () => {
  await new Promise((resolve) => listener.close(resolve));
});

async function connectError(connection: WarehouseConnection, options = {}): Promise<unknown> {
  const client = warehouseClient(connection, options);
  client.on('error', () => undefined);
  try {
    await client.connect();
  } catch (error) {
    return error;
  } finally {
    await client.end().catch(() => undefined);
  }
  throw new Error('connected');
}

describe('guarded connection to a customer warehouse', () => {
  it.each([
    ['loopback', '127.0.0.1', 'loopback'],
    ['IPv4-mapped loopback', '::ffff:127.0.0.1', 'loopback'],
    ['IPv6 loopback', '::1', 'loopback'],
  ])('refuses %s before any connection reaches the listener', async (_label, host, range) => {
    const error = await connectError(customer({ host, port: listenerPort }));
    expect(error).toBeInstanceOf(EgressRefused);
    expect((error as EgressRefused).range).toBe(range);
    expect(accepted).toBe(0);
  });

  it('refuses a name that resolves to loopback (localhost, the system resolver)', async () => {
    const error = await connectError(customer({ host: 'localhost', port: listenerPort }));
    expect(error).toBeInstanceOf(EgressRefused);
    expect((error as EgressRefused).range).toBe('loopback');
    expect(accepted).toBe(0);
  });

  it.each(['127.1', '2130706433', '0x7f000001', '127.000.000.001'])(
    'refuses %s, a loopback address the resolver reads in its old numeric forms',
    async (host) => {
      const error = await connectError(customer({ host, port: listenerPort }));
      expect(error).toBeInstanceOf(EgressRefused);
      expect(error).toMatchObject({ address: '127.0.0.1', range: 'loopback' });
      expect(accepted).toBe(0);
    },
  );

  it('refuses a name when any one of its addresses is refused', async () => {
    const { lookup, calls } = fixedLookup(() => ['93.184.215.14', '127.0.0.1']);
    const error = await connectError(customer({ host: 'warehouse.example.com', port: listenerPort }), {
      lookup,
    });
    expect(calls).toEqual(['warehouse.example.com']);
    expect(error).toBeInstanceOf(EgressRefused);
    expect((error as EgressRefused).address).toBe('127.0.0.1');
    expect(accepted).toBe(0);
  });

  it.each([
    ['private', '10.20.30.40', 'private'],
    ['link-local (cloud metadata)', '169.254.169.254', 'linkLocal'],
    ['carrier-grade NAT', '100.64.0.1', 'carrierGradeNat'],
    ['IPv6 unique local', 'fd00::1', 'uniqueLocal'],
  ])('refuses a %s address before connecting (no packet is sent)', async (_label, host, range) => {
    // The refusal is the guard's own error, raised before a socket connects: a connect
    // attempt would have ended in a timeout or an unreachable-network error instead.
    const started = Date.now();
    const error = await connectError(customer({ host, port: 5432 }), { connectTimeoutMs: 30_000 });
    expect(error).toBeInstanceOf(EgressRefused);
    expect(error).toMatchObject({ address: host, range });
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it('refuses a socket path, both as a field and at the socket', async () => {
    expect(customerConnectionProblem(customer({ host: '/var/run/postgresql' }))?.field).toBe('host');
    expect(() => warehouseClient(customer({ host: '/var/run/postgresql' }))).toThrow(
      InvalidWarehouseConnection,
    );
    const socket = guardedSocketFactory()();
    const error = await new Promise((resolve) => {
      socket.on('error', resolve);
      (socket.connect as unknown as (path: string) => void)('/var/run/postgresql/.s.PGSQL.5432');
    });
    expect(error).toBeInstanceOf(InvalidWarehouseConnection);
    expect(socket.destroyed).toBe(true);
  });

  it('refuses through a pool too, and keeps refusing on every new connection', async () => {
    const pool = warehouseConnectionPool(customer({ host: '127.0.0.1', port: listenerPort }));
    await expect(pool.query('SELECT 1')).rejects.toBeInstanceOf(EgressRefused);
    await expect(pool.query('SELECT 1')).rejects.toBeInstanceOf(EgressRefused);
    await pool.end();
    expect(accepted).toBe(0);
  });

  it('never puts the password in an error or the client’s printed form', async () => {
    const password = 'Pa55-never-shown-7f3a';
    const error = await connectError(customer({ host: '127.0.0.1', port: listenerPort, password }));
    expect(JSON.stringify(error, Object.getOwnPropertyNames(error))).not.toContain(password);
    expect(String((error as Error).stack)).not.toContain(password);
    const client = warehouseClient(customer({ password }));
    expect(JSON.stringify(client, (_k, v: unknown) => (typeof v === 'function' ? 'fn' : v))).not.toContain(
      password,
    );
  });
});

describe('guarded connection with private ranges allowed (self-hosted, tests)', () => {
  const allowLoopback = { allowPrivateRanges: ['127.0.0.0/8'] };
  let cluster: TestCluster;

  beforeAll(async () => {
    cluster = await clusters.start('guarded', { passwordLogins: true });
    await cluster.query("CREATE ROLE loader LOGIN PASSWORD 'Pa55-never-shown-7f3a'");
    await cluster.createDatabase('analytics');
    await cluster.query('GRANT CONNECT, CREATE ON DATABASE analytics TO loader');
  }, 60_000);

  it('connects a pool to the local PostgreSQL and answers queries', async () => {
    const pool = warehouseConnectionPool(
      customer({
        host: local.hostname,
        port: Number(local.port || 5432),
        user: decodeURIComponent(local.username || 'postgres'),
        password: decodeURIComponent(local.password),
        database: 'postgres',
      }),
      allowLoopback,
    );
    const { rows } = await pool.query<{ sum: number }>('SELECT 40 + 2 AS sum');
    expect(rows[0]?.sum).toBe(42);
    await pool.end();
  });

  it('connects to an extra cluster as a password role, through a name the guard resolves', async () => {
    const { lookup, calls } = fixedLookup(() => ['127.0.0.1']);
    const pool = warehouseConnectionPool(
      customer({ host: 'warehouse.example.com', port: cluster.port, maxConnections: 2 }),
      { ...allowLoopback, lookup },
    );
    const { rows } = await pool.query<{ who: string; db: string }>(
      'SELECT current_user AS who, current_database() AS db',
    );
    expect(rows[0]).toEqual({ who: 'loader', db: 'analytics' });
    await pool.end();
    expect(calls).toEqual(['warehouse.example.com']);
  });

  it('takes the resolver the saved-URL checks use (all addresses of a name, as a promise)', async () => {
    const answers: Record<string, string[]> = {
      'wh.example.com': ['127.0.0.1'],
      'in.example.com': ['10.9.8.7'],
    };
    const resolve = async (name: string) => answers[name] ?? Promise.reject(new Error(`ENOTFOUND ${name}`));
    const ok = await checkWarehouseConnection(
      customer({ host: 'wh.example.com', port: cluster.port }),
      'resolved',
      {
        ...allowLoopback,
        resolve,
      },
    );
    expect(ok).toMatchObject({ ok: true });
    const refused = await checkWarehouseConnection(
      customer({ host: 'in.example.com', port: cluster.port }),
      'resolved',
      { ...allowLoopback, resolve },
    );
    expect(refused).toMatchObject({ ok: false, code: 'egress_address_refused' });
    const unknown = await checkWarehouseConnection(
      customer({ host: 'nx.example.com', port: 5432 }),
      'resolved',
      {
        resolve,
      },
    );
    expect(unknown).toMatchObject({ ok: false, code: 'warehouse_connection_refused' });
  });

  it('checks the address again at every new connection of the pool', async () => {
    let answer = ['127.0.0.1'];
    const { lookup, calls } = fixedLookup(() => answer);
    const pool = warehouseConnectionPool(customer({ host: 'warehouse.example.com', port: cluster.port }), {
      ...allowLoopback,
      lookup,
    });
    // Two connections at once: two connects, two lookups.
    const [a, b] = await Promise.all([pool.connect(), pool.connect()]);
    expect(calls).toHaveLength(2);
    // The name now points inside the network: the next connection is refused; the open ones
    // were checked when they connected and keep working.
    answer = ['10.0.0.7'];
    const third = await pool.connect().then(
      () => 'connected',
      (error: unknown) => error,
    );
    expect(third).toBeInstanceOf(EgressRefused);
    expect(third).toMatchObject({ address: '10.0.0.7', range: 'private' });
    expect(calls).toHaveLength(3);
    expect((await a.query<{ one: number }>('SELECT 1 AS one')).rows[0]?.one).toBe(1);
    a.release();
    b.release();
    await pool.end();
  });

  it('checks a customer warehouse: connects, creates the schema, proves it can create tables', async () => {
    const connection = customer({ host: '127.0.0.1', port: cluster.port });
    const first = await checkWarehouseConnection(connection, 'pipeline', allowLoopback);
    expect(first).toMatchObject({ ok: true, schemaCreated: true });
    expect(first.ok && first.serverVersion).toMatch(/^\d+/);
    const second = await checkWarehouseConnection(connection, 'pipeline', allowLoopback);
    expect(second).toMatchObject({ ok: true, schemaCreated: false });
    // The probe table was rolled back.
    const tables = await cluster.query(
      "SELECT 1 FROM pg_tables WHERE schemaname = 'pipeline'",
      [],
      'analytics',
    );
    expect(tables).toHaveLength(0);
  });

  it('accepts the least-privilege grants: CONNECT and a schema the role owns or may create in', async () => {
    await cluster.query("CREATE ROLE narrow LOGIN PASSWORD 'narrow-pw-91c'");
    await cluster.query('REVOKE CONNECT ON DATABASE analytics FROM PUBLIC');
    await cluster.query('GRANT CONNECT ON DATABASE analytics TO narrow, loader');
    await cluster.query('CREATE SCHEMA granted', [], 'analytics');
    await cluster.query('GRANT USAGE, CREATE ON SCHEMA granted TO narrow', [], 'analytics');
    await cluster.query('CREATE SCHEMA owned AUTHORIZATION narrow', [], 'analytics');
    const narrow = customer({
      host: '127.0.0.1',
      port: cluster.port,
      user: 'narrow',
      password: 'narrow-pw-91c',
    });
    expect(await checkWarehouseConnection(narrow, 'granted', allowLoopback)).toMatchObject({
      ok: true,
      schemaCreated: false,
    });
    expect(await checkWarehouseConnection(narrow, 'owned', allowLoopback)).toMatchObject({ ok: true });
    // No CREATE on the database: a missing schema cannot be made.
    expect(await checkWarehouseConnection(narrow, 'missing', allowLoopback)).toMatchObject({
      ok: false,
      code: 'warehouse_permission_denied',
    });
    // USAGE alone on an existing schema is not enough.
    await cluster.query('CREATE SCHEMA readonly', [], 'analytics');
    await cluster.query('GRANT USAGE ON SCHEMA readonly TO narrow', [], 'analytics');
    expect(await checkWarehouseConnection(narrow, 'readonly', allowLoopback)).toMatchObject({
      ok: false,
      code: 'warehouse_permission_denied',
    });
    // Without CONNECT the login itself fails.
    await cluster.query("CREATE ROLE outsider LOGIN PASSWORD 'outsider-pw-22'");
    const outsider = customer({
      host: '127.0.0.1',
      port: cluster.port,
      user: 'outsider',
      password: 'outsider-pw-22',
    });
    expect(await checkWarehouseConnection(outsider, 'granted', allowLoopback)).toMatchObject({
      ok: false,
      code: 'warehouse_login_failed',
    });
  });

  it('answers each failure with its code and a message that holds no secret', async () => {
    const password = 'Wrong-Pa55-5ecret-d41';
    const cases: [WarehouseConnection, string, string][] = [
      [customer({ host: '127.0.0.1', port: cluster.port, password }), 'pipeline', 'warehouse_login_failed'],
      [
        customer({ host: '127.0.0.1', port: cluster.port, database: 'nope' }),
        'pipeline',
        'warehouse_database_missing',
      ],
      [customer({ host: '127.0.0.1', port: listenerPort }), 'pipeline', 'warehouse_connection_refused'],
      [
        customer({ host: '127.0.0.1', port: cluster.port, tlsMode: 'require' }),
        'pipeline',
        'warehouse_tls_failed',
      ],
      [customer({ host: 'db bad.example.com' }), 'pipeline', 'warehouse_connection_invalid'],
      [customer({ host: '127.0.0.1', port: cluster.port }), 'Bad-Schema', 'warehouse_connection_invalid'],
    ];
    for (const [connection, schema, code] of cases) {
      const result = await checkWarehouseConnection(connection, schema, allowLoopback);
      expect(result).toMatchObject({ ok: false, code });
      expect(JSON.stringify(result)).not.toContain(connection.password);
      expect(JSON.stringify(result)).not.toContain(connection.user);
    }
    // Without the test switch, loopback is refused like any customer's internal address.
    expect(
      await checkWarehouseConnection(customer({ host: '127.0.0.1', port: cluster.port }), 'pipeline'),
    ).toEqual({
      ok: false,
      code: 'egress_address_refused',
      message: expect.stringContaining('not public') as unknown as string,
    });
  });

  it('reconnects after the customer’s server restarts', async () => {
    const pool = warehouseConnectionPool(customer({ host: '127.0.0.1', port: cluster.port }), allowLoopback);
    expect((await pool.query<{ one: number }>('SELECT 1 AS one')).rows[0]?.one).toBe(1);
    await cluster.restart();
    // The idle connection died with the server; the pool drops it and opens (and checks) a new one.
    let answer: unknown;
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline) {
      answer = await pool.query<{ one: number }>('SELECT 1 AS one').then(
        (r) => r.rows[0]?.one,
        (e: unknown) => e,
      );
      if (answer === 1) break;
    }
    expect(answer).toBe(1);
    await pool.end();
  }, 30_000);
});

describe('TLS to a customer warehouse', () => {
  let cluster: TestCluster;
  let certificate: string;
  const allowLoopback = { allowPrivateRanges: ['127.0.0.0/8'] };
  // The certificate names wh.example.com; other.example.com resolves to the same server.
  const { lookup } = fixedLookup(() => ['127.0.0.1']);

  beforeAll(async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'pipeline-tls-'));
    try {
      await run('openssl', [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-keyout',
        path.join(dir, 'key.pem'),
        '-out',
        path.join(dir, 'cert.pem'),
        '-days',
        '2',
        '-subj',
        '/CN=wh.example.com',
        '-addext',
        'subjectAltName=DNS:wh.example.com',
      ]);
      certificate = readFileSync(path.join(dir, 'cert.pem'), 'utf8');
      const key = readFileSync(path.join(dir, 'key.pem'), 'utf8');
      cluster = await clusters.start('tls', { tls: { certificate, key } });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);

  const tls = (fields: Partial<WarehouseConnection>) =>
    customer({ port: cluster.port, user: 'postgres', database: 'postgres', password: '', ...fields });
  const encrypted = async (connection: WarehouseConnection, options: object) => {
    const pool = warehouseConnectionPool(connection, { ...allowLoopback, lookup, ...options });
    try {
      const { rows } = await pool.query<{ ssl: boolean }>(
        'SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()',
      );
      return rows[0]?.ssl;
    } finally {
      await pool.end();
    }
  };

  it('verify-full checks the certificate against the host name, not the address connected to', async () => {
    expect(
      await encrypted(tls({ host: 'wh.example.com', tlsMode: 'verify-full' }), { ca: certificate }),
    ).toBe(true);
    const mismatch = await checkWarehouseConnection(
      tls({ host: 'other.example.com', tlsMode: 'verify-full' }),
      'pipeline',
      { ...allowLoopback, lookup, ca: certificate },
    );
    expect(mismatch).toMatchObject({ ok: false, code: 'warehouse_tls_failed' });
    const untrusted = await checkWarehouseConnection(
      tls({ host: 'wh.example.com', tlsMode: 'verify-full' }),
      'pipeline',
      {
        ...allowLoopback,
        lookup,
      },
    );
    expect(untrusted).toMatchObject({ ok: false, code: 'warehouse_tls_failed' });
  });

  it('require encrypts without verifying; disable does not encrypt', async () => {
    expect(await encrypted(tls({ host: 'other.example.com', tlsMode: 'require' }), {})).toBe(true);
    expect(await encrypted(tls({ host: 'wh.example.com', tlsMode: 'disable' }), {})).toBe(false);
  });
});

describe('platform warehouses', () => {
  it('connect as the operator configured them, loopback included, without the guard', async () => {
    const pool = warehouseConnectionPool({
      ...customer(),
      owner: 'platform',
      host: local.hostname,
      port: Number(local.port || 5432),
      user: decodeURIComponent(local.username || 'postgres'),
      password: decodeURIComponent(local.password),
      database: 'postgres',
    });
    const { rows } = await pool.query<{ one: number }>('SELECT 1 AS one');
    expect(rows[0]?.one).toBe(1);
    await pool.end();
  });
});

describe('hostile connection fields', () => {
  const hostile = fc.oneof(
    // Anything holding a character no host name has.
    fc
      .tuple(
        fc.string({ maxLength: 20 }),
        fc.constantFrom(
          '/',
          ',',
          '=',
          ' ',
          '\u0000',
          '\n',
          '\t',
          '?',
          '@',
          '#',
          '\\',
          "'",
          '"',
          '%',
          '[',
          ':x',
        ),
        fc.string({ maxLength: 20 }),
      )
      .map(([a, b, c]) => `${a}${b}${c}`),
    // An option smuggled as a host.
    fc.string({ maxLength: 30 }).map((s) => `-${s}`),
    // Absurd lengths.
    fc.integer({ min: 254, max: 5000 }).map((n) => 'a'.repeat(n)),
    fc.constantFrom('', '.', '..', 'a..b', 'host=evil sslmode=disable', 'a,b', '/tmp', '@/tmp', 'a-.com'),
  );

  it('refuses them before any lookup or socket', async () => {
    const acceptedBefore = accepted;
    await fc.assert(
      fc.asyncProperty(hostile, async (host) => {
        const { lookup, calls } = fixedLookup(() => ['127.0.0.1']);
        expect(customerConnectionProblem(customer({ host }))?.field).toBe('host');
        expect(() => warehouseConnectionPool(customer({ host }), { lookup })).toThrow(
          InvalidWarehouseConnection,
        );
        const result = await checkWarehouseConnection(customer({ host, port: listenerPort }), 'pipeline', {
          lookup,
          allowPrivateRanges: ['127.0.0.0/8'],
        });
        expect(result).toMatchObject({ ok: false, code: 'warehouse_connection_invalid' });
        expect(calls).toEqual([]);
      }),
      { numRuns: 300 },
    );
    expect(accepted).toBe(acceptedBefore);
  });

  it('refuses ports, names and passwords no server takes', () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.integer({ max: 0 }), fc.integer({ min: 65536 }), fc.double({ noInteger: true })),
        (port) => customerConnectionProblem(customer({ port }))?.field === 'port',
      ),
    );
    fc.assert(
      fc.property(
        fc.constantFrom('database', 'user') as fc.Arbitrary<'database' | 'user'>,
        fc.oneof(
          fc.constant(''),
          fc.string({ minLength: 64, maxLength: 200 }).filter((s) => Buffer.byteLength(s) > 63),
          fc
            .tuple(fc.string(), fc.integer({ min: 0, max: 31 }), fc.string())
            .map(([a, c, b]) => a + String.fromCharCode(c) + b),
        ),
        (field, value) => customerConnectionProblem(customer({ [field]: value }))?.field === field,
      ),
    );
    expect(customerConnectionProblem(customer({ password: 'a\u0000b' }))?.field).toBe('password');
    expect(customerConnectionProblem(customer({ password: 'x'.repeat(1025) }))?.field).toBe('password');
    expect(customerConnectionProblem(customer({ tlsMode: 'prefer' as never }))?.field).toBe('tlsMode');
    for (const host of [
      'db.example.com',
      'DB-1.Example.com.',
      '93.184.215.14',
      '2606:2800:220:1::1',
      'a'.repeat(63),
    ])
      expect(customerConnectionProblem(customer({ host }))).toBeUndefined();
  });
});

describe('client-side limits on a customer connection (a server that disarms its own)', () => {
  const allowLoopback = { allowPrivateRanges: ['127.0.0.0/8'] };
  let scratch: ScratchDatabase;
  let hostile: WarehouseConnection;

  beforeAll(async () => {
    scratch = await createScratchDatabase(DATABASE_URL, 'guarded_limits');
    const admin = new Client({ connectionString: scratch.url });
    await admin.connect();
    // The review's trap: plpgsql catches query_canceled, so statement_timeout never ends the
    // statement. Bounded at two minutes so a failed run leaves no backend behind for long.
    await admin.query(`
      CREATE TABLE events (id int);
      CREATE FUNCTION stall() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE started timestamptz := clock_timestamp();
      BEGIN
        WHILE clock_timestamp() < started + interval '2 minutes' LOOP
          BEGIN PERFORM pg_sleep(3600); EXCEPTION WHEN query_canceled THEN NULL; END;
        END LOOP;
        RETURN NULL;
      END $$;
      CREATE TRIGGER stall BEFORE INSERT ON events FOR EACH STATEMENT EXECUTE FUNCTION stall();`);
    await admin.end();
    hostile = customer({
      host: local.hostname,
      port: Number(local.port || 5432),
      user: decodeURIComponent(local.username || 'postgres'),
      password: decodeURIComponent(local.password),
      database: scratch.name,
    });
  });

  afterAll(async () => {
    await scratch.drop();
  });

  it('ends a statement the server will not end: the server-side timeout alone would hang', async () => {
    const pool = warehouseConnectionPool(hostile, {
      ...allowLoopback,
      statementTimeoutMs: 200,
      readDeadlineMs: 1_500,
    });
    const started = Date.now();
    const error = await pool.query('INSERT INTO events VALUES (1)').then(
      () => undefined,
      (e: unknown) => e,
    );
    const waited = Date.now() - started;
    expect(error).toBeInstanceOf(ConnectionIdle);
    expect((error as ConnectionIdle).code).toBe('ETIMEDOUT');
    // The statement_timeout (200 ms) fired and was trapped; only our deadline ended the wait.
    expect(waited).toBeGreaterThanOrEqual(1_400);
    // The pool drops the broken connection and the next query gets a new one.
    const { rows } = await pool.query<{ one: number }>('SELECT 1 AS one');
    expect(rows[0]?.one).toBe(1);
    await pool.end();
  });

  it('lets a statement that answers within the deadline finish, however long it is silent', async () => {
    const pool = warehouseConnectionPool(hostile, { ...allowLoopback, readDeadlineMs: 1_500 });
    const { rows } = await pool.query<{ done: boolean }>('SELECT pg_sleep(0.8) IS NOT NULL AS done');
    expect(rows[0]?.done).toBe(true);
    await pool.end();
  });

  it('cuts an answer larger than the cap, and takes one just under it', async () => {
    const pool = warehouseConnectionPool(hostile, { ...allowLoopback, maxAnswerBytes: 1_000_000 });
    const error = await pool.query("SELECT repeat('x', 2000000) AS big").then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(AnswerTooLarge);
    const { rows } = await pool.query<{ small: string }>("SELECT repeat('y', 900000) AS small");
    expect(rows[0]?.small.length).toBe(900_000);
    await pool.end();
  });

  it('bounds a single client too (the connection check)', async () => {
    const client = warehouseClient(hostile, { ...allowLoopback, readDeadlineMs: 1_000 });
    client.on('error', () => undefined);
    await client.connect();
    const error = await client.query('INSERT INTO events VALUES (1)').then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ConnectionIdle);
    await client.end().catch(() => undefined);
  });
});
