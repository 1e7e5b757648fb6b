import { inspect } from 'node:util';
import { Client } from 'pg';
import {
  createScratchDatabase,
  DEFAULT_DATABASE_URL,
  withDatabase,
  type ScratchDatabase,
} from '@pipeline/postgres';
import type { WarehouseConnection } from '@pipeline/tenancy';
import { waitFor } from '../testing/topic-records';
import { warehouseConnectionOf } from '../testing/warehouse-connection';
import type { AccountLocation } from './warehouse-engine';
import { guardedWarehousePools } from './postgres/postgres-engine';
import { WarehouseEngines } from './warehouse-engines';
import { defaultWarehouseTimeouts } from './warehouse-pool';

const baseUrl = process.env.DATABASE_URL || DEFAULT_DATABASE_URL;
const account: AccountLocation = { accountId: 'acc-1', schema: 'account_pools' };
const since = { since: new Date(0) };
const query = { purpose: 'query' } as const;

/** Holds an exclusive lock on the account's events table so that reads of it wait, holding their connection. */
async function lockEvents(url: string): Promise<{ pid: number; release: () => Promise<void> }> {
  const holder = new Client({ connectionString: url });
  await holder.connect();
  await holder.query('BEGIN');
  await holder.query(`LOCK TABLE ${account.schema}.events IN ACCESS EXCLUSIVE MODE`);
  const { rows } = await holder.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
  return {
    pid: rows[0]!.pid,
    release: async () => {
      await holder.query('ROLLBACK');
      await holder.end();
    },
  };
}

describe('WarehouseEngines (real PostgreSQL)', () => {
  const dbs: ScratchDatabase[] = [];
  const connections: WarehouseConnection[] = [];
  let observer: Client;
  let engines: WarehouseEngines;

  /** Connections each warehouse database has now, the lock holders (`except`) left out. */
  async function connectionsPerWarehouse(except: number[] = []): Promise<number[]> {
    const { rows } = await observer.query<{ datname: string; n: number }>(
      `SELECT datname, count(*)::int AS n FROM pg_stat_activity
        WHERE datname = ANY($1) AND NOT (pid = ANY($2)) GROUP BY datname`,
      [dbs.map((db) => db.name), except],
    );
    return dbs.map((db) => rows.find((r) => r.datname === db.name)?.n ?? 0);
  }

  const open = (idleMs: number, processMaxConnections: number) =>
    WarehouseEngines.open(
      { processMaxConnections, idleMs },
      {
        postgres: { timeouts: defaultWarehouseTimeouts },
        clickhouse: { timeouts: defaultWarehouseTimeouts },
      },
    );

  beforeAll(async () => {
    for (let i = 0; i < 4; i += 1) {
      const db = await createScratchDatabase(baseUrl, `warehouse engines ${i}`);
      dbs.push(db);
      connections.push(warehouseConnectionOf(db.url, `w${i}`, 5));
    }
    observer = new Client({ connectionString: withDatabase(baseUrl, 'postgres') });
    await observer.connect();
    const setup = open(60_000, 10);
    for (const connection of connections) await setup.for(connection).ensureAccount(account);
    await setup.close();
  });
  afterEach(async () => {
    await engines?.close();
  });
  afterAll(async () => {
    await observer.end();
    for (const db of dbs) await db.drop();
  });

  it('keeps the connections of all warehouses within the process budget, and refuses when every pool is busy', async () => {
    engines = open(60_000, 6);
    // Opened in turn: 5 (own limit) vs half of 6 free -> 3, then half of 3 -> 2, then 1.
    for (const connection of connections.slice(0, 3)) await engines.for(connection).probe();
    expect(engines.pools().map((p) => [p.warehouseId, p.cap])).toEqual([
      ['w0', 3],
      ['w1', 2],
      ['w2', 1],
    ]);
    const locks = await Promise.all(dbs.slice(0, 3).map((db) => lockEvents(db.url)));
    const holders = locks.map((l) => l.pid);
    const reads = connections
      .slice(0, 3)
      .flatMap((connection) =>
        Array.from({ length: 6 }, () => engines.for(connection).query(account, 'event_names', since, query)),
      );
    let seen: number[] = [];
    await waitFor(
      async () => {
        seen = await connectionsPerWarehouse(holders);
        expect(seen[0]).toBeLessThanOrEqual(3);
        expect(seen[1]).toBeLessThanOrEqual(2);
        expect(seen[2]).toBeLessThanOrEqual(1);
        return seen.join() === '3,2,1,0';
      },
      10_000,
      'every pool to fill up',
    );
    // Polled again while 18 reads wait for 6 connections: never one more.
    for (let i = 0; i < 5; i += 1) expect(await connectionsPerWarehouse(holders)).toEqual([3, 2, 1, 0]);

    const refused = await engines
      .for(connections[3]!)
      .probe()
      .then(
        () => null,
        (e: unknown) => e,
      );
    expect(refused).toMatchObject({ code: '53300', warehouseId: 'w3' });
    expect(engines.for(connections[3]!).classifyError(refused)).toBe('unavailable');

    for (const lock of locks) await lock.release();
    expect((await Promise.all(reads)).map((rows) => rows.length)).toEqual(Array(18).fill(0));

    // Now every pool is idle: the least recently used one gives its share to the new warehouse.
    await engines.for(connections[3]!).probe();
    expect(engines.held()).toBeLessThanOrEqual(6);
    expect(engines.pools().map((p) => p.warehouseId)).toContain('w3');
    expect(engines.pools()).toHaveLength(3);
    await waitFor(
      async () => (await connectionsPerWarehouse()).reduce((a, b) => a + b, 0) <= 6,
      5000,
      'the evicted pool to disconnect',
    );
  });

  it('closes a pool left idle, and its connections with it', async () => {
    engines = open(1000, 10);
    await Promise.all(
      Array.from({ length: 4 }, () => engines.for(connections[0]!).query(account, 'has_rows', {}, query)),
    );
    expect(engines.pools().map((p) => [p.warehouseId, p.active])).toEqual([['w0', 0]]);
    expect((await connectionsPerWarehouse())[0]).toBeGreaterThan(0);
    await waitFor(async () => engines.pools().length === 0, 5000, 'the idle pool to close');
    await waitFor(async () => (await connectionsPerWarehouse())[0] === 0, 5000, 'its connections to end');
    // A handle held across the close opens the warehouse again.
    const handle = engines.for(connections[0]!);
    expect(await handle.query(account, 'has_rows', {}, query)).toEqual([{ found: false }]);
    expect(engines.pools().map((p) => p.warehouseId)).toEqual(['w0']);
  });

  it('opens a new pool when the connection changes, closing the old one once its work ends', async () => {
    engines = open(60_000, 10);
    const before = connections[1]!;
    await engines.for(before).probe();
    expect(engines.pools().map((p) => p.cap)).toEqual([5]);

    const lock = await lockEvents(dbs[1]!.url);
    const waiting = engines.for(before).query(account, 'event_names', since, query);
    await waitFor(
      async () => (await connectionsPerWarehouse([lock.pid]))[1] === 1 && engines.pools()[0]?.active === 1,
      5000,
      'the read to wait on the lock',
    );
    const changed = { ...before, maxConnections: 2 };
    await engines.for(changed).probe();
    // The old pool (busy) still counts against the budget next to the new one.
    expect(engines.pools().map((p) => [p.warehouseId, p.cap, p.active])).toEqual([
      ['w1', 2, 0],
      ['w1', 5, 1],
    ]);
    expect(engines.held()).toBe(7);
    await lock.release();
    expect(await waiting).toEqual([]);
    expect(engines.pools().map((p) => [p.warehouseId, p.cap])).toEqual([['w1', 2]]);
    await waitFor(async () => (await connectionsPerWarehouse())[1] === 1, 5000, 'the old pool to disconnect');
  });

  it('shows no password in a handle, logged or serialized', async () => {
    engines = open(60_000, 10);
    const secret = 'pw-never-shown-4f1c';
    const handle = engines.for({ ...connections[0]!, password: secret });
    // trust authentication: the password is sent and ignored, and the pool is open.
    await handle.probe();
    expect(JSON.stringify(handle)).toBe('{"engine":"postgres"}');
    expect(inspect(handle, { depth: 10, showHidden: true })).not.toContain(secret);
  });

  it('counts a pool busy while a change cursor is read, until the iteration ends', async () => {
    engines = open(60_000, 10);
    const engine = engines.for(connections[2]!);
    await engine.writeRows(account, []);
    await engine.writeStream(
      account,
      'crm_contacts',
      'id',
      Array.from({ length: 5 }, (_, i) => ({ id: `c${i}`, email: `c${i}@example.com` })),
    );
    const changes = await engine.readChanges(
      account,
      { kind: 'stream', table: 'crm_contacts', since: { at: '1970-01-01T00:00:00Z', key: '' } },
      { purpose: 'query', batchRows: 2 },
    );
    expect(changes).not.toBeNull();
    const keys: string[] = [];
    for await (const batch of changes!) {
      expect(engines.pools()[0]?.active).toBe(1);
      keys.push(...batch.map((c) => c.key));
      if (keys.length >= 4) break;
    }
    expect(keys).toEqual(['c0', 'c1', 'c2', 'c3']);
    expect(engines.pools()[0]?.active).toBe(0);
    expect(
      await engine.readChanges(
        account,
        { kind: 'stream', table: 'crm_deals', since: { at: '1970-01-01T00:00:00Z', key: '' } },
        { purpose: 'query', batchRows: 2 },
      ),
    ).toBeNull();
    expect(engines.pools()[0]?.active).toBe(0);
  });

  it("holds customers' pools to half the budget, so busy customer servers leave the platform room", async () => {
    const customer = (connection: WarehouseConnection): WarehouseConnection => ({
      ...connection,
      owner: 'customer',
    });
    engines = WarehouseEngines.open(
      { processMaxConnections: 8, idleMs: 60_000 },
      {
        postgres: {
          timeouts: defaultWarehouseTimeouts,
          connect: guardedWarehousePools({ allowPrivateRanges: ['127.0.0.0/8'] }),
        },
        clickhouse: { timeouts: defaultWarehouseTimeouts },
      },
    );
    expect(engines.customerBudget()).toBe(4);
    const customers = connections.slice(0, 3).map(customer);
    for (const connection of customers) await engines.for(connection).probe();
    // Half of the customers' 4 free -> 2, then half of 2 -> 1, then the last 1.
    expect(engines.pools().map((p) => [p.warehouseId, p.cap])).toEqual([
      ['w0', 2],
      ['w1', 1],
      ['w2', 1],
    ]);
    expect(engines.heldByCustomers()).toBe(4);
    // Every customer pool busy, as on servers that never answer.
    const locks = await Promise.all(dbs.slice(0, 3).map((db) => lockEvents(db.url)));
    const reads = customers.map((connection) =>
      engines.for(connection).query(account, 'event_names', since, query),
    );
    await waitFor(
      async () => engines.pools().every((p) => p.active === 1),
      5000,
      'the customer reads to wait',
    );
    // Another customer's warehouse finds the customers' half used up, though 4 connections are free...
    const refused = await engines
      .for(customer({ ...connections[3]!, warehouseId: 'w3-customer' }))
      .probe()
      .then(
        () => null,
        (e: unknown) => e,
      );
    expect(refused).toMatchObject({ code: '53300', warehouseId: 'w3-customer' });
    // ...which stay for the platform's warehouse.
    await engines.for(connections[3]!).probe();
    expect(engines.pools().find((p) => p.warehouseId === 'w3')?.cap).toBe(2);
    for (const lock of locks) await lock.release();
    expect((await Promise.all(reads)).map((rows) => rows.length)).toEqual([0, 0, 0]);
    // Idle now: a new customer's warehouse closes the least recently used customer pool, not the platform's.
    await engines.for(customer({ ...connections[3]!, warehouseId: 'w3-customer' })).probe();
    expect(engines.pools().map((p) => p.warehouseId)).toContain('w3');
    expect(engines.heldByCustomers()).toBeLessThanOrEqual(4);
  });
});
