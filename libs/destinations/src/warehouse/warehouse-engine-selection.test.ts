import { startClickHouseTestServer, type ClickHouseTestServer } from '@pipeline/clickhouse/testing';
import { createScratchDatabase, DEFAULT_DATABASE_URL, type ScratchDatabase } from '@pipeline/postgres';
import type { WarehouseConnection } from '@pipeline/tenancy';
import { warehouseConnectionOf } from '../testing/warehouse-connection';
import { ClickHouseEngine } from './clickhouse/clickhouse-engine';
import { directClickHouseClient, type ClickHouseClientSettings } from './clickhouse/clickhouse-server';
import { clickhouseErrorKind } from './clickhouse/clickhouse-errors';
import { PostgresEngine } from './postgres/postgres-engine';
import { WarehouseConnectionBudgetExhausted } from './warehouse-connection-budget';
import { engineErrorKinds, openWarehouseEngine, WarehouseEngines } from './warehouse-engines';
import { warehouseConnectionFromUrl } from './warehouse-directory';
import { warehouseErrorKind } from './warehouse-errors';
import { defaultWarehouseTimeouts } from './warehouse-pool';

const settings = {
  postgres: { timeouts: defaultWarehouseTimeouts },
  clickhouse: { timeouts: defaultWarehouseTimeouts },
};

const clickhouseAt = (warehouseId: string): WarehouseConnection => ({
  warehouseId,
  engine: 'clickhouse',
  host: '127.0.0.1',
  // Nothing listens there: opening an engine must not connect.
  port: 1,
  database: 'default',
  user: 'default',
  password: '',
  tlsMode: 'disable',
  owner: 'platform',
  maxConnections: 4,
});

// Errors each engine reads its own way: a SQLSTATE means nothing to ClickHouse.
const loginRefusedByPostgres = Object.assign(new Error('password authentication failed'), { code: '28P01' });
const loginRefusedByClickHouse = Object.assign(new Error('Authentication failed'), {
  code: '516',
  type: 'AUTHENTICATION_FAILED',
});

describe('WarehouseEngines opens the engine a connection names (real PostgreSQL)', () => {
  let db: ScratchDatabase;
  let engines: WarehouseEngines;

  beforeAll(async () => {
    db = await createScratchDatabase(process.env.DATABASE_URL || DEFAULT_DATABASE_URL, 'engine selection');
  });
  afterEach(async () => {
    await engines?.close();
  });
  afterAll(async () => {
    await db.drop();
  });

  it('opens a PostgresEngine for a postgres connection and a ClickHouseEngine for a clickhouse one', async () => {
    engines = WarehouseEngines.open({ processMaxConnections: 6, idleMs: 60_000 }, settings);
    const postgres = warehouseConnectionOf(db.url, 'pg-1', 2);
    const clickhouse = clickhouseAt('ch-1');

    const pg = engines.pin(postgres);
    const ch = engines.pin(clickhouse);
    try {
      expect(pg.engine).toBeInstanceOf(PostgresEngine);
      expect(pg.engine.engine).toBe('postgres');
      expect(ch.engine).toBeInstanceOf(ClickHouseEngine);
      expect(ch.engine.engine).toBe('clickhouse');
      // The PostgreSQL one works against the real server.
      await expect(pg.engine.probe()).resolves.toBeUndefined();
    } finally {
      pg.release();
      ch.release();
    }
    expect(engines.for(postgres).engine).toBe('postgres');
    expect(engines.for(clickhouse).engine).toBe('clickhouse');
    expect(engines.pools().map((p) => [p.warehouseId, p.cap])).toEqual([
      ['pg-1', 2],
      ['ch-1', 2],
    ]);
  });

  it("hands each ClickHouseEngine the process's pool size and idle time, and its own connect", async () => {
    const seen: { warehouseId: string; settings: ClickHouseClientSettings }[] = [];
    const open = openWarehouseEngine(
      {
        ...settings,
        clickhouse: {
          ...settings.clickhouse,
          connect: (connection, clientSettings) => {
            seen.push({ warehouseId: connection.warehouseId, settings: clientSettings });
            return directClickHouseClient(connection, clientSettings);
          },
        },
      },
      12_345,
    );
    const engine = open(clickhouseAt('ch-2'), 3);
    try {
      expect(engine).toBeInstanceOf(ClickHouseEngine);
      expect(seen).toEqual([
        {
          warehouseId: 'ch-2',
          settings: {
            maxOpenConnections: 3,
            requestTimeoutMs: defaultWarehouseTimeouts.statementTimeoutMs + 5000,
            idleSocketTtlMs: 2500,
          },
        },
      ]);
    } finally {
      await engine.close();
    }
  });

  it('refuses a connection naming an engine it does not know', () => {
    const open = openWarehouseEngine(settings, 1000);
    const unknown = { ...clickhouseAt('odd'), engine: 'oracle' } as unknown as WarehouseConnection;
    expect(() => open(unknown, 1)).toThrow('warehouse odd: unknown engine oracle');
  });

  it("answers a handle's error verdict by its own engine's rules, without opening a pool", () => {
    engines = WarehouseEngines.open({ processMaxConnections: 6, idleMs: 60_000 }, settings);
    const pg = engines.for(warehouseConnectionOf(db.url, 'pg-2', 2));
    const ch = engines.for(clickhouseAt('ch-3'));
    // The two engines disagree on this error, so the answers show whose rules were used.
    expect(warehouseErrorKind(loginRefusedByPostgres)).toBe('misconfigured');
    expect(clickhouseErrorKind(loginRefusedByPostgres)).not.toBe('misconfigured');

    expect(clickhouseErrorKind(loginRefusedByClickHouse)).toBe('misconfigured');
    expect(warehouseErrorKind(loginRefusedByClickHouse)).not.toBe('misconfigured');

    expect(pg.classifyError(loginRefusedByPostgres)).toBe('misconfigured');
    expect(ch.classifyError(loginRefusedByPostgres)).toBe(clickhouseErrorKind(loginRefusedByPostgres));
    expect(ch.classifyError(loginRefusedByClickHouse)).toBe('misconfigured');
    expect(pg.classifyError(loginRefusedByClickHouse)).toBe(warehouseErrorKind(loginRefusedByClickHouse));
    expect(engineErrorKinds).toEqual({ postgres: warehouseErrorKind, clickhouse: clickhouseErrorKind });
    // The process's own budget refusal is unavailable for either engine.
    const exhausted = new WarehouseConnectionBudgetExhausted('ch-3', 6);
    expect([pg.classifyError(exhausted), ch.classifyError(exhausted)]).toEqual([
      'unavailable',
      'unavailable',
    ]);
    expect(engines.pools()).toEqual([]);
  });
});

describe('a ClickHouse WAREHOUSE_URL reaches a ClickHouseEngine (real ClickHouse test server)', () => {
  const password = 'ch-Url-pw/5:@';
  let server: ClickHouseTestServer;
  let engines: WarehouseEngines;
  beforeAll(async () => {
    server = await startClickHouseTestServer({ user: 'loader', password });
  }, 60_000);
  afterAll(async () => {
    await engines?.close();
    await server?.destroy();
  });

  it('parses the URL, opens the ClickHouse engine and works through it', async () => {
    const connection = warehouseConnectionFromUrl(
      `clickhouse://loader:${encodeURIComponent(password)}@${server.host}:${server.port}/default`,
      { warehouseId: 'ch-url' },
    );
    expect(connection).toMatchObject({ engine: 'clickhouse', tlsMode: 'disable', password });
    engines = WarehouseEngines.open({ processMaxConnections: 4, idleMs: 60_000 }, settings);
    const engine = engines.for(connection);
    await expect(engine.probe()).resolves.toBeUndefined();
    const account = { accountId: 'acc-url', schema: 'account_url' };
    await engine.ensureAccount(account);
    expect(await engine.accountTables(account)).toEqual(['events', 'users', 'groups', 'aliases']);
    await engine.dropAccount(account);
    expect(await engine.accountTables(account)).toEqual([]);

    // The same server with a wrong password: ClickHouse's own verdict, misconfigured.
    const refused = engines.for({ ...connection, warehouseId: 'ch-url-wrong', password: 'wrong' });
    const error = await refused.probe().then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).not.toBeNull();
    expect(refused.classifyError(error)).toBe('misconfigured');
  });
});
