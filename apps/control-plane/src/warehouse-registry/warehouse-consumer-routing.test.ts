import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import { Client } from 'pg';
import {
  controlPlaneWarehouseCalls,
  defaultWarehouseTimeouts,
  DestinationUnavailable,
  ResolvingWarehouseDirectory,
  WarehouseDestination,
  WarehouseEngines,
  type DeliveryMessage,
} from '@pipeline/destinations';
import type { OutboxEnvelope } from '@pipeline/events';
import { createLogger } from '@pipeline/logger';
import { createScratchDatabase, DEFAULT_DATABASE_URL, type ScratchDatabase } from '@pipeline/postgres';
import { ControlPlaneClient, warehouseSchemaFor } from '@pipeline/tenancy';
import { startHarness, TEST_WAREHOUSE_TOKEN, type Harness } from '../testing/harness';

// The warehouse consumer's side of the internal warehouse endpoints, over HTTP: its directory
// resolves an account's placement here and its rows land in the warehouse that names; an
// account the control plane does not know is dead-lettered; a status it reports is recorded;
// with the control plane gone, only what it already resolved can be routed.
const quiet = createLogger({ service: 'warehouse-consumer-routing-test', stream: new PassThrough() });

function record(accountId: string, name: string): DeliveryMessage {
  const envelope: OutboxEnvelope = {
    v: 2,
    accountId,
    writeKeyId: `wk-${accountId}`,
    batchId: randomUUID(),
    receivedAt: '2026-03-01T10:00:05.000Z',
    ip: null,
    userAgent: null,
    events: [
      {
        type: 'track',
        event: name,
        messageId: randomUUID(),
        anonymousId: 'anon',
        timestamp: '2026-03-01T10:00:00.000Z',
      },
    ],
  };
  return {
    topic: 'outbox',
    partition: 0,
    offset: '1',
    key: accountId,
    value: Buffer.from(JSON.stringify(envelope)),
    headers: {},
    timestamp: '0',
  };
}

describe('the warehouse consumer routed by the control plane (real PostgreSQL, HTTP)', () => {
  let warehouse: ScratchDatabase;
  let h: Harness;
  let server: Server;
  let engines: WarehouseEngines;
  let directory: ResolvingWarehouseDirectory;
  let destination: WarehouseDestination;
  let calls: ReturnType<typeof controlPlaneWarehouseCalls>;

  beforeAll(async () => {
    warehouse = await createScratchDatabase(
      process.env.DATABASE_URL || DEFAULT_DATABASE_URL,
      'consumer routing warehouse',
    );
    h = await startHarness('warehouse consumer routing', { warehouseUrl: warehouse.url });
    server = createServer(h.app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    calls = controlPlaneWarehouseCalls(new ControlPlaneClient(base, TEST_WAREHOUSE_TOKEN, quiet));
    directory = new ResolvingWarehouseDirectory(calls.resolve, { ttlMs: 60_000 }, quiet);
    engines = WarehouseEngines.open(
      { processMaxConnections: 4, idleMs: 60_000 },
      {
        postgres: { timeouts: defaultWarehouseTimeouts },
        clickhouse: { timeouts: defaultWarehouseTimeouts },
      },
    );
    destination = new WarehouseDestination({
      directory,
      engines,
      logger: quiet,
      reportStatus: calls.reportStatus,
    });
  });
  afterAll(async () => {
    if (server.listening) await new Promise<void>((resolve) => server.close(() => resolve()));
    await engines.close();
    await h.close();
    await warehouse.drop();
  });

  it("loads a tenant's events into the warehouse its placement names", async () => {
    const tenant = await h.tenant();
    const report = await destination.deliver([record(tenant.accountId, 'Signed Up')]);
    expect(report).toEqual({ delivered: 1, consentSkipped: 0, failed: [] });
    const client = new Client({ connectionString: warehouse.url });
    await client.connect();
    try {
      const { rows } = await client.query<{ event: string }>(
        `SELECT event FROM ${warehouseSchemaFor(tenant.accountId)}.events`,
      );
      expect(rows).toEqual([{ event: 'Signed Up' }]);
    } finally {
      await client.end();
    }
    const defaultId = (await h.services.warehouses.find('default')).id;
    expect(destination.warehouseHealth()).toEqual([
      { warehouseId: defaultId, breaker: 'closed', status: 'active' },
    ]);
  });

  it('dead-letters the records of an account the control plane does not know', async () => {
    const report = await destination.deliver([record(randomUUID(), 'Nowhere')]);
    expect(report.failed).toEqual([
      expect.objectContaining({
        target: 'warehouse',
        retryable: false,
        reason: 'no_warehouse: the account has no warehouse placement',
      }),
    ]);
  });

  it('records a reported status, its detail cut to what the control plane keeps', async () => {
    const defaultId = (await h.services.warehouses.find('default')).id;
    const statusOf = async () =>
      (
        (await h.db.dataSource.query('SELECT status, status_detail FROM warehouses WHERE id = $1', [
          defaultId,
        ])) as { status: string; status_detail: string | null }[]
      )[0];
    await calls.reportStatus(defaultId, 'misconfigured', `28000 ${'x'.repeat(600)}`);
    expect(await statusOf()).toEqual({ status: 'misconfigured', status_detail: `28000 ${'x'.repeat(494)}` });
    await calls.reportStatus(defaultId, 'active', null);
    expect(await statusOf()).toEqual({ status: 'active', status_detail: null });
  });

  it('with the control plane gone, routes what it resolved and holds the batch for what it did not', async () => {
    const known = await h.tenant();
    const unknown = await h.tenant();
    await destination.deliver([record(known.accountId, 'Before')]);
    await new Promise<void>((resolve) => server.close(() => resolve()));
    expect(await destination.deliver([record(known.accountId, 'After')])).toEqual({
      delivered: 1,
      consentSkipped: 0,
      failed: [],
    });
    const error = await destination.deliver([record(unknown.accountId, 'Held')]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DestinationUnavailable);
    expect((error as Error).message).toMatch(/^warehouse placement unknown: /);
  });
});
