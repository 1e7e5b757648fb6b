import { randomUUID } from 'node:crypto';
import { PassThrough } from 'node:stream';
import { Client } from 'pg';
import type { OutboxEnvelope, TrackingEvent } from '@pipeline/events';
import { createLogger } from '@pipeline/logger';
import {
  createScratchDatabase,
  DEFAULT_DATABASE_URL,
  ensureDatabase,
  type ScratchDatabase,
} from '@pipeline/postgres';
import { warehouseSchemaFor, type ResolvedWarehouse, type WarehouseConnection } from '@pipeline/tenancy';
import type { DeliveryMessage } from '../destination';
import { WarehouseDestination, type WarehouseEngineSource } from './warehouse-destination';
import { ResolvingWarehouseDirectory, warehouseConnectionFromUrl } from './warehouse-directory';
import { WarehouseEngines } from './warehouse-engines';
import { defaultWarehouseTimeouts } from './warehouse-pool';
import { guardedWarehousePools } from './postgres/postgres-engine';

// Routing by placement (real PostgreSQL, one database per warehouse). An account moving
// between warehouses: during the copy stage its rows go to both; a target that refuses them
// holds the record for that target alone; a cut-over heard while a batch is written sends the
// account's rows to its new warehouse, not the old one. An account without a placement is
// dead-lettered; a process out of warehouse connections holds rows without judging a warehouse.
const logger = createLogger({ service: 'warehouse-routing-test', stream: new PassThrough() });
const baseUrl = process.env.DATABASE_URL || DEFAULT_DATABASE_URL;

const event = (name: string): TrackingEvent => ({
  type: 'track',
  event: name,
  messageId: randomUUID(),
  anonymousId: 'anon',
  timestamp: '2026-03-01T10:00:00.000Z',
});

let offset = 0;
function record(accountId: string, events: TrackingEvent[]): DeliveryMessage {
  const envelope: OutboxEnvelope = {
    v: 2,
    accountId,
    writeKeyId: `wk-${accountId}`,
    batchId: randomUUID(),
    receivedAt: '2026-03-01T10:00:05.000Z',
    ip: null,
    userAgent: null,
    events,
  };
  offset += 1;
  return {
    topic: 'outbox',
    partition: 0,
    offset: String(offset),
    key: accountId,
    value: Buffer.from(JSON.stringify(envelope)),
    headers: {},
    timestamp: String(Date.now()),
  };
}

async function withClient<T>(url: string, work: (client: Client) => Promise<T>): Promise<T> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** The event names stored for the account in a database, [] without its table. */
const storedNames = (url: string, accountId: string) =>
  withClient(url, async (client) => {
    const schema = warehouseSchemaFor(accountId);
    const { rows } = await client.query<{ found: boolean }>(
      `SELECT to_regclass('${schema}.events') IS NOT NULL AS found`,
    );
    if (!rows[0]?.found) return [];
    return (
      await client.query<{ event: string }>(`SELECT event FROM ${schema}.events ORDER BY event`)
    ).rows.map((r) => r.event);
  });

describe('an account moving between warehouses (real PostgreSQL)', () => {
  const databases: ScratchDatabase[] = [];
  const connections: Record<'one' | 'two' | 'gone', WarehouseConnection> = {} as never;
  let gone: ScratchDatabase;
  let engines: WarehouseEngines;

  beforeAll(async () => {
    for (const name of ['one', 'two', 'gone'] as const) {
      const db = await createScratchDatabase(baseUrl, `warehouse move ${name}`);
      databases.push(db);
      connections[name] = warehouseConnectionFromUrl(db.url, { warehouseId: `wh-${name}` });
      if (name === 'gone') gone = db;
    }
    // Its database does not exist (yet): the warehouse answers 3D000.
    await gone.drop();
    // The test's customer-owned warehouses are on this machine: loopback allowed, as an
    // operator allows a private range with EGRESS_ALLOW_PRIVATE_RANGES.
    engines = WarehouseEngines.open(
      { processMaxConnections: 12, idleMs: 60_000 },
      {
        postgres: {
          timeouts: defaultWarehouseTimeouts,
          connect: guardedWarehousePools({ allowPrivateRanges: ['127.0.0.0/8'] }),
        },
        clickhouse: { timeouts: defaultWarehouseTimeouts },
      },
    );
  });
  afterAll(async () => {
    await engines.close();
    await Promise.all(databases.map((db) => db.drop()));
  });

  const placed = (
    connection: WarehouseConnection,
    accountId: string,
    epoch: number,
    alsoWriteTo?: WarehouseConnection,
  ): ResolvedWarehouse => {
    const placementOf = (c: WarehouseConnection) => ({
      warehouseId: c.warehouseId,
      engine: 'postgres' as const,
      schema: warehouseSchemaFor(accountId),
      epoch,
    });
    return {
      placement: placementOf(connection),
      connection,
      ...(alsoWriteTo
        ? { alsoWriteTo: { placement: placementOf(alsoWriteTo), connection: alsoWriteTo } }
        : {}),
    };
  };

  const destinationOver = (
    placements: Map<string, ResolvedWarehouse>,
    source: WarehouseEngineSource = engines,
  ) => {
    const directory = new ResolvingWarehouseDirectory(
      (accountId) => Promise.resolve(placements.get(accountId) ?? null),
      { ttlMs: 60_000 },
      logger,
    );
    const statuses: string[] = [];
    const destination = new WarehouseDestination({
      directory,
      engines: source,
      logger,
      breaker: { baseMs: 50, maxMs: 50, probeWaitMs: 10 },
      reportStatus: (warehouseId, status) => {
        statuses.push(`${warehouseId} ${status}`);
        return Promise.resolve();
      },
    });
    return { destination, directory, statuses };
  };

  it('the copy stage writes each row to both warehouses', async () => {
    const accountId = randomUUID();
    const { destination } = destinationOver(
      new Map([[accountId, placed(connections.one, accountId, 3, connections.two)]]),
    );
    const report = await destination.deliver([record(accountId, [event('first'), event('second')])]);
    expect(report).toEqual({ delivered: 2, consentSkipped: 0, failed: [] });
    expect(await storedNames(databases[0]?.url ?? '', accountId)).toEqual(['first', 'second']);
    expect(await storedNames(databases[1]?.url ?? '', accountId)).toEqual(['first', 'second']);
  });

  it('a target that refuses holds the record for it alone; once it is fixed the record lands once in each', async () => {
    const accountId = randomUUID();
    const { destination, statuses } = destinationOver(
      new Map([[accountId, placed(connections.one, accountId, 3, connections.gone)]]),
    );
    const events = [event('kept'), event('held')];
    const first = await destination.deliver([record(accountId, events)]);
    expect(first.delivered).toBe(0);
    expect(first.failed).toEqual([
      expect.objectContaining({
        target: 'warehouse:wh-gone',
        retryable: true,
        holdUntilAvailable: true,
        reason: expect.stringMatching(/^warehouse_misconfigured: 3D000 database ".*" does not exist$/),
      }),
    ]);
    expect((JSON.parse(first.failed[0]?.value.toString() ?? '{}') as OutboxEnvelope).events).toEqual(events);
    expect(await storedNames(databases[0]?.url ?? '', accountId)).toEqual(['held', 'kept']);
    expect(statuses).toEqual(['wh-gone misconfigured']);
    expect(destination.warehouseHealth()).toEqual(
      expect.arrayContaining([
        // Open, or half-open already: its cooldown here is 50 ms.
        {
          warehouseId: 'wh-gone',
          breaker: expect.stringMatching(/^(open|half-open)$/),
          status: 'misconfigured',
        },
      ]),
    );

    expect(await ensureDatabase(gone.url)).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, first.failed[0]?.retryAfterMs ?? 0));
    const retried = first.failed[0] as NonNullable<(typeof first.failed)[0]>;
    const second = await destination.deliver([{ ...retried.message, value: retried.value }]);
    expect(second).toEqual({ delivered: 2, consentSkipped: 0, failed: [] });
    expect(await storedNames(databases[0]?.url ?? '', accountId)).toEqual(['held', 'kept']);
    expect(await storedNames(gone.url, accountId)).toEqual(['held', 'kept']);
    expect(statuses).toEqual(['wh-gone misconfigured', 'wh-gone active']);
  });

  it('a cut-over heard while a batch is written sends the moved account to its new warehouse', async () => {
    const stays = randomUUID();
    const moves = randomUUID();
    const placements = new Map([
      [stays, placed(connections.one, stays, 1)],
      [moves, placed(connections.one, moves, 1)],
    ]);
    let cutOver = false;
    // The real engines; the first write of the account that stays is where the control plane
    // cuts the other one over, as a change message would reach the consumer mid-batch.
    const source: WarehouseEngineSource = {
      for: (connection) => {
        const engine = engines.for(connection);
        return {
          ensureAccount: (account) => engine.ensureAccount(account),
          probe: () => engine.probe(),
          classifyError: (error) => engine.classifyError(error),
          writeRows: async (account, rows) => {
            if (!cutOver && account.accountId === stays) {
              cutOver = true;
              placements.set(moves, placed(connections.two, moves, 2));
              directory.invalidate({ kind: 'tenant_changed', accountId: moves });
              await directory.resolve(moves);
            }
            return engine.writeRows(account, rows);
          },
        };
      },
    };
    const { destination, directory } = destinationOver(placements, source);
    await directory.resolve(moves);
    const report = await destination.deliver([
      record(stays, [event('stays')]),
      record(moves, [event('moves')]),
    ]);
    expect(cutOver).toBe(true);
    expect(report).toEqual({ delivered: 2, consentSkipped: 0, failed: [] });
    expect(directory.currentEpoch(moves)).toBe(2);
    expect(await storedNames(databases[0]?.url ?? '', stays)).toEqual(['stays']);
    expect(await storedNames(databases[0]?.url ?? '', moves)).toEqual([]);
    expect(await storedNames(databases[1]?.url ?? '', moves)).toEqual(['moves']);
  });

  it('a placement that keeps moving while the batch is written: its rows wait, none written to a stale one', async () => {
    const accountId = randomUUID();
    let asked = 0;
    // Every answer is already older than the newest epoch seen: a control plane mid-cut-over.
    const destination = new WarehouseDestination({
      directory: {
        resolve: () => {
          asked += 1;
          return Promise.resolve(placed(connections.one, accountId, asked));
        },
        currentEpoch: () => asked + 1,
        invalidate: () => undefined,
      },
      engines,
      logger,
      breaker: { baseMs: 50, maxMs: 50, probeWaitMs: 10 },
    });
    const report = await destination.deliver([record(accountId, [event('moving')])]);
    expect(asked).toBe(3);
    expect(report.delivered).toBe(0);
    expect(report.failed).toEqual([
      expect.objectContaining({
        target: 'warehouse:wh-one',
        holdUntilAvailable: true,
        retryAfterMs: 10,
        reason: 'warehouse_moving: the placement changed while the batch was written',
      }),
    ]);
    expect(await storedNames(databases[0]?.url ?? '', accountId)).toEqual([]);
  });

  it('out of connections: the rows wait briefly, and the warehouse is not judged for it', async () => {
    const first = randomUUID();
    const second = randomUUID();
    // One connection for the whole process: the first warehouse's write holds it.
    const scarce = WarehouseEngines.open(
      { processMaxConnections: 1, idleMs: 60_000 },
      {
        postgres: { timeouts: defaultWarehouseTimeouts },
        clickhouse: { timeouts: defaultWarehouseTimeouts },
      },
    );
    try {
      const { destination, statuses } = destinationOver(
        new Map([
          [first, placed(connections.one, first, 1)],
          [second, placed(connections.two, second, 1)],
        ]),
        scarce,
      );
      const report = await destination.deliver([
        record(first, [event('first')]),
        record(second, [event('second')]),
      ]);
      expect(report.delivered).toBe(1);
      expect(report.failed).toEqual([
        expect.objectContaining({
          target: 'warehouse:wh-two',
          holdUntilAvailable: true,
          retryAfterMs: 10,
          reason: expect.stringMatching(
            /^warehouse_busy: warehouse wh-two: the process's 1 warehouse connections/,
          ),
        }),
      ]);
      expect(destination.warehouseHealth()).toEqual(
        expect.arrayContaining([{ warehouseId: 'wh-two', breaker: 'closed', status: 'active' }]),
      );
      expect(statuses).toEqual([]);
      // Now the first warehouse's pool is idle and gives its connection up.
      const retried = report.failed[0] as NonNullable<(typeof report.failed)[0]>;
      expect(await destination.deliver([{ ...retried.message, value: retried.value }])).toEqual({
        delivered: 1,
        consentSkipped: 0,
        failed: [],
      });
      expect(await storedNames(databases[1]?.url ?? '', second)).toEqual(['second']);
    } finally {
      await scarce.close();
    }
  });

  it("a table dropped behind the consumer's back: a bug on a platform warehouse, the customer's doing on theirs", async () => {
    for (const owner of ['platform', 'customer'] as const) {
      const accountId = randomUUID();
      const connection = { ...connections.one, warehouseId: `wh-${owner}`, owner };
      const { destination, statuses } = destinationOver(
        new Map([[accountId, placed(connection, accountId, 1)]]),
      );
      expect((await destination.deliver([record(accountId, [event('before')])])).delivered).toBe(1);
      await withClient(databases[0]?.url ?? '', (client) =>
        client.query(`DROP TABLE ${warehouseSchemaFor(accountId)}.events`),
      );
      const after = destination.deliver([record(accountId, [event('after')])]);
      if (owner === 'platform') {
        // The process exits (the runner's onFatal) and its restart recreates the table.
        await expect(after).rejects.toMatchObject({ code: '42P01' });
        expect(statuses).toEqual([]);
      } else {
        const report = await after;
        expect(report.failed).toEqual([
          expect.objectContaining({
            target: 'warehouse:wh-customer',
            holdUntilAvailable: true,
            reason: expect.stringMatching(
              /^warehouse_misconfigured: 42P01 relation ".*\.events" does not exist/,
            ),
          }),
        ]);
        expect(statuses).toEqual(['wh-customer misconfigured']);
      }
    }
  });

  it('an account without a warehouse is dead-lettered as no_warehouse', async () => {
    const accountId = randomUUID();
    const { destination } = destinationOver(new Map());
    const report = await destination.deliver([record(accountId, [event('nowhere')])]);
    expect(report.delivered).toBe(0);
    expect(report.failed).toEqual([
      expect.objectContaining({
        target: 'warehouse',
        retryable: false,
        reason: 'no_warehouse: the account has no warehouse placement',
      }),
    ]);
  });
});
