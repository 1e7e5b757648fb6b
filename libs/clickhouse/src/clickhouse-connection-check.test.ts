import { createServer, type Server } from 'node:net';
import type { WarehouseConnection } from '@pipeline/tenancy';
import {
  checkClickHouseConnection,
  classifyClickHouseCheckError,
  clickhouseConnectionProblem,
  type ClickHouseCheckClient,
} from './clickhouse-connection-check';

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
  let closed = 0;
  const answer = (query: string) => {
    statements.push(query);
    const rule = rules.find(([pattern]) => pattern.test(query));
    if (rule && rule[1] instanceof Error) throw rule[1];
    return rule?.[1];
  };
  const client: ClickHouseCheckClient = {
    query: async ({ query }) => {
      const rows =
        answer(query) ?? (/version\(\)/.test(query) ? [{ one: 1, version: '26.7.2.1' }] : [{ n: 1 }]);
      return { json: async <T>() => rows as T[] };
    },
    command: async ({ query }) => answer(query),
    close: async () => {
      closed += 1;
    },
  };
  return { client, statements, closed: () => closed };
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
