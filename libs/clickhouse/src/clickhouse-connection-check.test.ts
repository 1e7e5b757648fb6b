import { createServer, type Server } from 'node:net';
import type { WarehouseConnection } from '@pipeline/tenancy';
import {
  checkClickHouseConnection,
  classifyClickHouseCheckError,
  clickhouseConnectionProblem,
  type ClickHouseCheckClient,
} from './clickhouse-connection-check';
import { InvalidClickHouseConnection } from './clickhouse-client';

// The ClickHouse connection check's logic against a scripted client (what it asks, in which
// order, what each refusal means), and its egress guard against a real listener on loopback.

const PASSWORD = 'Ch-Pa55-never-echoed-41';
const connection = (fields: Partial<WarehouseConnection> = {}): WarehouseConnection => ({
  warehouseId: 'app:1',
  engine: 'clickhouse',
  host: 'ch.example.com',
  port: 8443,
  database: 'pipeline',
  user: 'loader',
  password: PASSWORD,
  tlsMode: 'verify-full',
  owner: 'customer',
  maxConnections: 1,
  ...fields,
});

/** A client answering each statement by the first rule whose pattern it matches. */
function scripted(rules: [RegExp, unknown][] = []) {
  const statements: string[] = [];
  const params: Record<string, unknown>[] = [];
  let closed = 0;
  const answer = (query: string) => {
    statements.push(query);
    const rule = rules.find(([pattern]) => pattern.test(query));
    if (rule && rule[1] instanceof Error) throw rule[1];
    return rule?.[1];
  };
  const client: ClickHouseCheckClient = {
    query: async (p) => {
      params.push(p);
      const { query } = p;
      const rows =
        answer(query) ?? (/version\(\)/.test(query) ? [{ one: 1, version: '26.7.2.1' }] : [{ n: 1 }]);
      return { json: async <T>() => rows as T[] };
    },
    command: async (p) => {
      params.push(p);
      return answer(p.query);
    },
    close: async () => {
      closed += 1;
    },
  };
  return { client, statements, params, closed: () => closed };
}
const clickhouseError = (code: string, message = `Code: ${code}. DB::Exception: loader ${PASSWORD}`) =>
  Object.assign(new Error(message), { code, type: 'X' });

describe('the ClickHouse connection check (scripted client)', () => {
  it('reads the version, finds the database, and creates, alters, fills, reads and drops a probe', async () => {
    const { client, statements, closed } = scripted();
    const result = await checkClickHouseConnection(connection(), { clientFor: () => client });
    expect(result).toEqual({ ok: true, databaseCreated: false, serverVersion: '26.7.2.1' });
    const probe = /`pipeline`\.`(_pipeline_probe_[0-9a-f]{12})`/.exec(statements[3] ?? '')?.[1];
    expect(probe).toBeDefined();
    expect(statements).toEqual([
      'SELECT 1 AS one, version() AS version',
      'SELECT count() AS n FROM system.databases WHERE name = {database:String}',
      'CREATE DATABASE IF NOT EXISTS `pipeline`',
      `CREATE TABLE \`pipeline\`.\`${probe}\` (id UInt8) ENGINE = MergeTree ORDER BY id`,
      `ALTER TABLE \`pipeline\`.\`${probe}\` ADD COLUMN IF NOT EXISTS added UInt8 DEFAULT 0`,
      `INSERT INTO \`pipeline\`.\`${probe}\` (id, added) VALUES (1, 1)`,
      `CREATE OR REPLACE VIEW \`pipeline\`.\`${probe}_view\` AS SELECT id, added FROM \`pipeline\`.\`${probe}\``,
      `SELECT count() AS n FROM \`pipeline\`.\`${probe}_view\``,
      `DROP VIEW \`pipeline\`.\`${probe}_view\``,
      `DROP TABLE \`pipeline\`.\`${probe}\``,
    ]);
    expect(closed()).toBe(1);
  });

  it('creates a missing database when the user may', async () => {
    const { client, statements } = scripted([[/system\.databases/, [{ n: '0' }]]]);
    const result = await checkClickHouseConnection(connection(), { clientFor: () => client });
    expect(result).toMatchObject({ ok: true, databaseCreated: true });
    expect(statements[2]).toBe('CREATE DATABASE IF NOT EXISTS `pipeline`');
  });

  it('answers permission_denied when the database exists but CREATE DATABASE is not granted', async () => {
    const { client, statements } = scripted([[/CREATE DATABASE/, clickhouseError('497')]]);
    const result = await checkClickHouseConnection(connection(), { clientFor: () => client });
    expect(result).toMatchObject({ ok: false, code: 'warehouse_permission_denied' });
    expect(statements).toHaveLength(3);
  });

  it('answers database_missing when the database is missing and the user may not create it', async () => {
    const { client, statements } = scripted([
      [/system\.databases/, [{ n: 0 }]],
      [/CREATE DATABASE/, clickhouseError('497')],
    ]);
    const result = await checkClickHouseConnection(connection(), { clientFor: () => client });
    expect(result).toEqual({
      ok: false,
      code: 'warehouse_database_missing',
      message: 'The database does not exist.',
    });
    expect(statements).toHaveLength(3);
  });

  it.each([
    ['a wrong password (516)', /^SELECT 1/, '516', 'warehouse_login_failed'],
    ['an unknown user (192)', /^SELECT 1/, '192', 'warehouse_login_failed'],
    ['no CREATE TABLE (497)', /^CREATE TABLE/, '497', 'warehouse_permission_denied'],
    ['no ALTER ADD COLUMN (497)', /^ALTER TABLE/, '497', 'warehouse_permission_denied'],
    ['no INSERT (497)', /^INSERT/, '497', 'warehouse_permission_denied'],
    ['no CREATE VIEW (497)', /^CREATE OR REPLACE VIEW/, '497', 'warehouse_permission_denied'],
    ['no SELECT (497)', /^SELECT count\(\) AS n FROM `/, '497', 'warehouse_permission_denied'],
    ['no DROP VIEW (497)', /^DROP VIEW `/, '497', 'warehouse_permission_denied'],
    ['no DROP TABLE (497)', /^DROP TABLE `/, '497', 'warehouse_permission_denied'],
    ['a database dropped meanwhile (81)', /^CREATE TABLE/, '81', 'warehouse_database_missing'],
    ['a server timeout (159)', /^SELECT 1/, '159', 'warehouse_connection_refused'],
    ['another server error', /^CREATE TABLE/, '62', 'warehouse_check_failed'],
  ])('answers %s with its code, never the server’s text', async (_label, where, code, failure) => {
    const { client, statements } = scripted([[where, clickhouseError(code)]]);
    const result = await checkClickHouseConnection(connection(), { clientFor: () => client });
    expect(result).toMatchObject({ ok: false, code: failure });
    expect(JSON.stringify(result)).not.toMatch(new RegExp(`${PASSWORD}|loader|DB::Exception`));
    // A probe made before the failure is dropped again.
    if (!/CREATE TABLE|SELECT 1/.test(where.source))
      expect(statements.at(-1)).toMatch(/^DROP TABLE (IF EXISTS )?`pipeline`\.`_pipeline_probe_[0-9a-f]+`$/);
  });

  it('refuses fields it cannot use before building a client', async () => {
    let built = 0;
    const clientFor = () => {
      built += 1;
      return scripted().client;
    };
    for (const [fields, field] of [
      [{ host: 'ch.example.com/x' }, 'host'],
      [{ host: 'https://ch.example.com' }, 'host'],
      [{ port: 0 }, 'port'],
      [{ database: 'system' }, 'database'],
      [{ database: 'Analytics' }, 'database'],
      [{ database: 'a`b' }, 'database'],
      [{ database: '' }, 'database'],
      [{ user: 'loader\n' }, 'user'],
      [{ password: 'a\u0000b' }, 'password'],
      [{ tlsMode: 'prefer' as never }, 'tlsMode'],
    ] as const) {
      const result = await checkClickHouseConnection(connection(fields), { clientFor });
      expect({ field, result }).toEqual({
        field,
        result: {
          ok: false,
          code: 'warehouse_connection_invalid',
          message: expect.stringMatching(`^The ${field} `),
        },
      });
    }
    expect(built).toBe(0);
    expect(clickhouseConnectionProblem(connection())).toBeUndefined();
  });
});

describe('what a client error means', () => {
  it.each([
    [{ code: '516' }, 'warehouse_login_failed'],
    [{ code: '193' }, 'warehouse_login_failed'],
    [{ code: '194' }, 'warehouse_login_failed'],
    [{ code: '81' }, 'warehouse_database_missing'],
    [{ code: '497' }, 'warehouse_permission_denied'],
    [{ code: 'ECONNREFUSED' }, 'warehouse_connection_refused'],
    [{ code: 'ENOTFOUND' }, 'warehouse_connection_refused'],
    [{ code: 'ECONNRESET' }, 'warehouse_connection_refused'],
    [{ message: 'Timeout error.' }, 'warehouse_connection_refused'],
    [{ code: '209' }, 'warehouse_connection_refused'],
    [{ code: 'DEPTH_ZERO_SELF_SIGNED_CERT' }, 'warehouse_tls_failed'],
    [{ code: 'ERR_TLS_CERT_ALTNAME_INVALID' }, 'warehouse_tls_failed'],
    [{ code: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE' }, 'warehouse_tls_failed'],
    [{ code: 'EPROTO', message: 'ssl3_get_record:wrong version number' }, 'warehouse_tls_failed'],
    [{ code: '62' }, 'warehouse_check_failed'],
    [new Error('Unexpected token < in JSON'), 'warehouse_check_failed'],
    [undefined, 'warehouse_check_failed'],
  ])('%j is %s', (error, code) => {
    expect(classifyClickHouseCheckError(error).code).toBe(code);
  });

  it('names a ClickHouse code in the message, nothing else of the error', () => {
    expect(classifyClickHouseCheckError({ code: '62', message: 'Syntax error near loader' }).message).toBe(
      'The server answered with an error (ClickHouse code 62).',
    );
    expect(classifyClickHouseCheckError({ code: 'weird code' }).message).toBe(
      'The server answered with an error.',
    );
  });
});

describe('the egress guard of a customer’s ClickHouse (real sockets)', () => {
  let listener: Server;
  let port: number;
  let connections = 0;

  beforeAll(async () => {
    listener = createServer((socket) => {
      connections += 1;
      socket.destroy();
    });
    await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
    port = (listener.address() as { port: number }).port;
  });
  afterAll(() => new Promise<void>((resolve) => listener.close(() => resolve())));

  it.each([
    ['127.0.0.1', {}],
    ['localhost', {}],
    ['::1', {}],
    ['169.254.169.254', {}],
    ['ch.example.com', { resolve: async () => ['93.184.215.14', '127.0.0.1'] }],
    ['ch.example.com', { resolve: async () => ['10.0.0.7'] }],
  ])('refuses %s, and nothing reaches the listener', async (host, guard) => {
    for (const tlsMode of ['disable', 'verify-full'] as const) {
      const result = await checkClickHouseConnection(connection({ host, port, tlsMode }), {
        ...guard,
        requestTimeoutMs: 5_000,
      });
      expect([host, tlsMode, result]).toEqual([
        host,
        tlsMode,
        { ok: false, code: 'egress_address_refused', message: expect.any(String) },
      ]);
    }
    expect(connections).toBe(0);
  });

  it('reaches loopback when the operator allows it (the listener hangs up: connection refused)', async () => {
    const result = await checkClickHouseConnection(
      connection({ host: '127.0.0.1', port, tlsMode: 'disable' }),
      {
        allowPrivateRanges: ['127.0.0.0/8'],
        requestTimeoutMs: 5_000,
      },
    );
    expect(result).toMatchObject({ ok: false, code: 'warehouse_connection_refused' });
    expect(connections).toBeGreaterThan(0);
  });
});

describe('the check, exactly', () => {
  it('asks with JSONEachRow and the database as a parameter', async () => {
    const { client, params } = scripted();
    await checkClickHouseConnection(connection(), { clientFor: () => client });
    expect(params[0]).toEqual({ query: 'SELECT 1 AS one, version() AS version', format: 'JSONEachRow' });
    expect(params[1]).toEqual({
      query: 'SELECT count() AS n FROM system.databases WHERE name = {database:String}',
      format: 'JSONEachRow',
      query_params: { database: 'pipeline' },
    });
    expect(params[7]).toEqual({
      query: expect.stringMatching(/^SELECT count\(\) AS n FROM `/),
      format: 'JSONEachRow',
    });
  });

  it('takes no rows as no version, no database and no probe row', async () => {
    const none = scripted([
      [/^SELECT 1/, []],
      [/system\.databases/, []],
    ]);
    expect(await checkClickHouseConnection(connection(), { clientFor: () => none.client })).toEqual({
      ok: true,
      databaseCreated: true,
      serverVersion: '',
    });
    for (const rows of [[], [{ n: 2 }], [{ n: 0 }]]) {
      const { client, statements, closed } = scripted([[/^SELECT count\(\) AS n FROM `/, rows]]);
      expect(await checkClickHouseConnection(connection(), { clientFor: () => client })).toEqual({
        ok: false,
        code: 'warehouse_check_failed',
        message: 'The server answered with an error.',
      });
      // The view and the table are dropped although the check failed.
      expect(statements.slice(-2)).toEqual([
        expect.stringMatching(/^DROP VIEW IF EXISTS `pipeline`\.`_pipeline_probe_[0-9a-f]{12}_view`$/),
        expect.stringMatching(/^DROP TABLE IF EXISTS `pipeline`\.`_pipeline_probe_[0-9a-f]{12}`$/),
      ]);
      expect(closed()).toBe(1);
    }
  });

  it('drops the view and the table after a failure past CREATE TABLE, and only what is left', async () => {
    const atInsert = scripted([[/^INSERT/, clickhouseError('497')]]);
    await checkClickHouseConnection(connection(), { clientFor: () => atInsert.client });
    const probe = /`(_pipeline_probe_[0-9a-f]{12})`/.exec(atInsert.statements[3] ?? '')?.[1];
    expect(atInsert.statements.slice(5)).toEqual([
      `INSERT INTO \`pipeline\`.\`${probe}\` (id, added) VALUES (1, 1)`,
      `DROP VIEW IF EXISTS \`pipeline\`.\`${probe}_view\``,
      `DROP TABLE IF EXISTS \`pipeline\`.\`${probe}\``,
    ]);
    const atDropTable = scripted([[/^DROP TABLE `/, clickhouseError('497')]]);
    await checkClickHouseConnection(connection(), { clientFor: () => atDropTable.client });
    expect(atDropTable.statements.slice(8)).toEqual([
      expect.stringMatching(/^DROP VIEW `/),
      expect.stringMatching(/^DROP TABLE `/),
      expect.stringMatching(/^DROP TABLE IF EXISTS `/),
    ]);
    // A failing cleanup changes nothing of the answer.
    const cleanupFails = scripted([
      [/^INSERT/, clickhouseError('497')],
      [/IF EXISTS/, clickhouseError('497')],
    ]);
    expect(
      await checkClickHouseConnection(connection(), { clientFor: () => cleanupFails.client }),
    ).toMatchObject({
      code: 'warehouse_permission_denied',
    });
    expect(cleanupFails.statements).toHaveLength(8);
  });

  it('answers the error of CREATE DATABASE itself unless it is 497 on a missing database', async () => {
    const { client } = scripted([
      [/system\.databases/, [{ n: 0 }]],
      [/CREATE DATABASE/, clickhouseError('516')],
    ]);
    expect(await checkClickHouseConnection(connection(), { clientFor: () => client })).toMatchObject({
      ok: false,
      code: 'warehouse_login_failed',
    });
  });

  it('answers an error building the client, and closes no client it has not', async () => {
    const result = await checkClickHouseConnection(connection(), {
      clientFor: () => {
        throw new InvalidClickHouseConnection('host', 'is not a TCP host');
      },
    });
    expect(result).toEqual({
      ok: false,
      code: 'warehouse_connection_invalid',
      message: 'The host is not a TCP host.',
    });
  });

  it("checks a platform connection's database only", async () => {
    const built: string[] = [];
    const clientFor = (c: { host: string }) => {
      built.push(c.host);
      return scripted().client;
    };
    const platform = await checkClickHouseConnection(
      connection({ owner: 'platform', host: 'clickhouse_1' }),
      {
        clientFor,
      },
    );
    expect(platform).toMatchObject({ ok: true });
    expect(built).toEqual(['clickhouse_1']);
    const badDatabase = await checkClickHouseConnection(
      connection({ owner: 'platform', database: 'system' }),
      {
        clientFor,
      },
    );
    expect(badDatabase).toMatchObject({ ok: false, code: 'warehouse_connection_invalid' });
    expect(built).toHaveLength(1);
  });

  it.each([
    [{ host: 'a/b' }, 'host', 'The host is not a DNS name or an IP address.'],
    [{ host: 5 as never }, 'host', 'The host is not a DNS name or an IP address.'],
    [{ port: 0 }, 'port', 'The port is not a port number (1-65535).'],
    [{ port: 65536 }, 'port', 'The port is not a port number (1-65535).'],
    [
      { database: undefined as never },
      'database',
      'The database is not a plain lowercase identifier (a-z or _ first, then a-z, 0-9, _; 63 at most; not system).',
    ],
    [{ database: 'information_schema' }, 'database', expect.any(String)],
    [{ database: 'a'.repeat(64) }, 'database', expect.any(String)],
    [{ user: '' }, 'user', 'The user must be 1-63 characters without control characters.'],
    [{ user: 'u'.repeat(64) }, 'user', expect.any(String)],
    [{ user: 5 as never }, 'user', expect.any(String)],
    [{ user: 'lo\u001fader' }, 'user', expect.any(String)],
    [{ user: 'lo\u007fader' }, 'user', expect.any(String)],
    [{ password: 'p'.repeat(1025) }, 'password', 'The password must be at most 1024 characters without NUL.'],
    [{ password: undefined as never }, 'password', expect.any(String)],
    [{ tlsMode: 'prefer' as never }, 'tlsMode', 'The tlsMode must be disable, require or verify-full.'],
  ])('refuses %j as its %s with its rule', async (over, field, message) => {
    expect(clickhouseConnectionProblem(connection(over))?.field).toBe(field);
    expect(await checkClickHouseConnection(connection(over), { clientFor: () => scripted().client })).toEqual(
      {
        ok: false,
        code: 'warehouse_connection_invalid',
        message,
      },
    );
  });

  it.each([
    { database: 'system_logs' },
    { database: 'a'.repeat(63) },
    { user: 'u'.repeat(63) },
    { user: 'lo ader' },
    { password: 'p'.repeat(1024) },
    { password: 'pa\u001fss' },
    { port: 1 },
    { port: 65535 },
  ])('accepts %j', (over) => {
    expect(clickhouseConnectionProblem(connection(over))).toBeUndefined();
  });
});

describe('every failure code and its message', () => {
  const refused = 'The server could not be reached at this host and port (no answer, refused or timed out).';
  const tls = 'TLS could not be set up or the certificate was not trusted for this host name.';
  it.each<[unknown, string, string]>([
    ...[
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
      '159',
      '209',
      '210',
    ].map((code): [unknown, string, string] => [{ code }, 'warehouse_connection_refused', refused]),
    [{ message: 'socket hang up' }, 'warehouse_connection_refused', refused],
    [{ code: 'ERR_TLS_HANDSHAKE_TIMEOUT' }, 'warehouse_tls_failed', tls],
    [{ code: 'ERR_SSL_WRONG_VERSION_NUMBER' }, 'warehouse_tls_failed', tls],
    [{ code: 'EPROTO' }, 'warehouse_tls_failed', tls],
    [{ code: 'X_SELF_SIGNED' }, 'warehouse_tls_failed', tls],
    [{ code: 'UNABLE_TO_VERIFY_X' }, 'warehouse_tls_failed', tls],
    [{ code: 'X_CERT_X' }, 'warehouse_tls_failed', tls],
    [{ message: 'certificate has expired' }, 'warehouse_tls_failed', tls],
    [{ code: 'X_ERR_TLS' }, 'warehouse_check_failed', 'The server answered with an error.'],
    [{ code: 'X_ERR_SSL' }, 'warehouse_check_failed', 'The server answered with an error.'],
    [{ code: 'X_EPROTO' }, 'warehouse_check_failed', 'The server answered with an error.'],
    [{ code: 'x62' }, 'warehouse_check_failed', 'The server answered with an error.'],
    [{ code: '62x' }, 'warehouse_check_failed', 'The server answered with an error.'],
    [{ code: '12345' }, 'warehouse_check_failed', 'The server answered with an error.'],
    [{ code: '1234' }, 'warehouse_check_failed', 'The server answered with an error (ClickHouse code 1234).'],
    [{ code: 62 }, 'warehouse_check_failed', 'The server answered with an error.'],
    [{ code: 516 }, 'warehouse_check_failed', 'The server answered with an error.'],
    [{ code: 'x', message: ['timeout'] }, 'warehouse_check_failed', 'The server answered with an error.'],
    [{ code: 'x', message: ['TLS'] }, 'warehouse_check_failed', 'The server answered with an error.'],
    [{}, 'warehouse_check_failed', 'The server answered with an error.'],
    [{ code: '516' }, 'warehouse_login_failed', 'The server refused the login: a wrong user or password.'],
    [{ code: '192' }, 'warehouse_login_failed', 'The server refused the login: a wrong user or password.'],
    [
      { code: '497' },
      'warehouse_permission_denied',
      'The user may not create, alter, insert into, select from or drop tables in the database (see the grant script).',
    ],
    [{ code: '81' }, 'warehouse_database_missing', 'The database does not exist.'],
  ])('%j is %s', (error, code, message) => {
    expect(classifyClickHouseCheckError(error)).toEqual({ code, message });
  });

  it('answers an egress refusal with its own message', async () => {
    const result = await checkClickHouseConnection(connection({ host: '10.0.0.1' }), {
      requestTimeoutMs: 1_000,
    });
    expect(result).toEqual({
      ok: false,
      code: 'egress_address_refused',
      message:
        'The host is, or resolves to, an address that is not public (loopback, private, link-local or reserved): connections there are refused.',
    });
  });
});
