import { createClient } from '@clickhouse/client';
import type { WarehouseConnection } from '@pipeline/tenancy';
import { checkClickHouseConnection } from './clickhouse-connection-check';
import { useClickHouseTestServer } from './testing';

// The connection check against a real ClickHouse engine (the chdb-backed test server, over
// HTTP): a login it refuses, a database it creates, a probe table that does not stay. The
// server is on loopback, reached as EGRESS_ALLOW_PRIVATE_RANGES allows a self-hosted network.
// Grants are not covered by the test server: permission_denied is tested with a scripted client.

const PASSWORD = 'Ch-Server-Pa55-9d3e71';
const server = useClickHouseTestServer({ user: 'loader', password: PASSWORD });
const allowLoopback = { allowPrivateRanges: ['127.0.0.0/8'], requestTimeoutMs: 10_000 };

const connection = (fields: Partial<WarehouseConnection> = {}): WarehouseConnection => ({
  warehouseId: 'app:check',
  engine: 'clickhouse',
  host: '127.0.0.1',
  port: server.current.port,
  database: 'pipeline_check',
  user: 'loader',
  password: PASSWORD,
  tlsMode: 'disable',
  owner: 'customer',
  maxConnections: 1,
  ...fields,
});

async function tablesOf(database: string): Promise<string[]> {
  const client = createClient({ url: server.current.url, username: 'loader', password: PASSWORD });
  try {
    const rows = await (
      await client.query({
        query: 'SELECT name FROM system.tables WHERE database = {database:String} ORDER BY name',
        query_params: { database },
        format: 'JSONEachRow',
      })
    ).json<{ name: string }>();
    return rows.map((row) => row.name);
  } finally {
    await client.close();
  }
}

describe('the ClickHouse connection check (real ClickHouse engine)', () => {
  it('creates a missing database once, and leaves no probe table behind', async () => {
    const first = await checkClickHouseConnection(connection(), allowLoopback);
    expect(first).toEqual({
      ok: true,
      databaseCreated: true,
      serverVersion: expect.stringMatching(/^\d+\./),
    });
    const again = await checkClickHouseConnection(connection(), allowLoopback);
    expect(again).toMatchObject({ ok: true, databaseCreated: false });
    expect(await tablesOf('pipeline_check')).toEqual([]);
  }, 30_000);

  it('answers a wrong password as warehouse_login_failed, without the password', async () => {
    const result = await checkClickHouseConnection(
      connection({ password: 'Wrong-Pa55-also-secret' }),
      allowLoopback,
    );
    expect(result).toEqual({
      ok: false,
      code: 'warehouse_login_failed',
      message: 'The server refused the login: a wrong user or password.',
    });
  });

  it('answers TLS to a plain HTTP port as warehouse_tls_failed', async () => {
    for (const tlsMode of ['require', 'verify-full'] as const)
      expect(await checkClickHouseConnection(connection({ tlsMode }), allowLoopback)).toMatchObject({
        ok: false,
        code: 'warehouse_tls_failed',
      });
  });

  it('answers a server that is down as warehouse_connection_refused', async () => {
    const result = await checkClickHouseConnection(connection({ port: 1 }), allowLoopback);
    expect(result).toMatchObject({ ok: false, code: 'warehouse_connection_refused' });
  });

  it('refuses loopback without the operator’s setting, before connecting', async () => {
    const result = await checkClickHouseConnection(connection(), { requestTimeoutMs: 5_000 });
    expect(result).toMatchObject({ ok: false, code: 'egress_address_refused' });
  });
});
