import { PassThrough } from 'node:stream';
import { startHoldingProxy, type HoldingProxy } from '@pipeline/connectors/testing';
import { startLookAlikeVendor, type LookAlikeServer } from '@pipeline/destinations/testing';
import { createLogger } from '@pipeline/logger';
import { CredentialCipher } from '../apps/credential-cipher';
import { JobRunner } from '../jobs/job-runner';
import { startHarness, TEST_CREDENTIAL_KEYS, type Harness, type Tenant } from '../testing/harness';
import { startBrazeUsersRun } from '../testing/integration-fixtures';
import { startScratchWarehouse, userRow, type ScratchWarehouse } from '../testing/warehouse';
import { waitUntil } from '../testing/wait';
import { IntegrationRunExecutor } from './integration-run-executor';

// An integration run's watermark moves only while the run still owns its job. The run here is
// cancelled while Braze holds its batch, and its worker does not heartbeat in between (a long
// interval), so the first thing it writes after the vendor accepts is the watermark: that write
// must not land, or the next run would skip rows the cancelled one never recorded as sent.
describe('a stale integration run writes nothing (real PostgreSQL, held Braze look-alike)', () => {
  let h: Harness;
  let warehouse: ScratchWarehouse;
  let braze: LookAlikeServer;
  let proxy: HoldingProxy;
  let runner: JobRunner;
  let t: Tenant;

  const logs: string[] = [];
  const logger = () => {
    const stream = new PassThrough();
    stream.on('data', (chunk: Buffer) => logs.push(chunk.toString('utf8')));
    return createLogger({ service: 'stale-run-test', stream, level: 'info' });
  };

  beforeAll(async () => {
    warehouse = await startScratchWarehouse('stale run warehouse');
    h = await startHarness('stale run');
    braze = await startLookAlikeVendor('braze');
    proxy = await startHoldingProxy(braze.url);
    runner = new JobRunner({
      dataSource: h.db.dataSource,
      logger: logger(),
      concurrency: 1,
      pollIntervalMs: 25,
      heartbeatIntervalMs: 600_000,
      staleAfterMs: 600_000,
      maxAttempts: 2,
      retryBaseMs: 50,
      retryMaxMs: 100,
    }).register(
      new IntegrationRunExecutor({
        regulationOf: (accountId) => h.services.regulations.service.regulationOf(accountId),
        dataSource: h.db.dataSource,
        warehouse: warehouse.warehouses,
        cipher: new CredentialCipher(TEST_CREDENTIAL_KEYS),
        jobs: h.services.jobs,
        logger: logger(),
        baseUrls: { braze: proxy.url },
        dependencyRetryMs: 200,
      }),
    );
    runner.start();
    t = await h.tenant();
  });

  afterAll(async () => {
    proxy?.release();
    await runner?.stop();
    await proxy?.close();
    await braze?.close();
    await h?.close();
    await warehouse?.drop();
  });

  it('does not move the watermark of a run cancelled while the vendor held its batch', async () => {
    const at = new Date(Date.now() - 60_000);
    await warehouse.seed(t.accountId, [userRow('u1', at), userRow('u2', at)]);
    const { integrationId, jobId } = await startBrazeUsersRun(h.as(t.key));
    await waitUntil('the batch to reach Braze', async () => proxy.held() > 0);

    // Taken from its worker as pausing the integration does; the worker is not told.
    await h.db.dataSource.transaction((tx) => h.services.jobs.cancelActive({ integrationId }, 'paused', tx));
    proxy.release();
    await waitUntil('Braze to accept the batch', async () => braze.accepted.length > 0);
    // The run's next write after the send finds the job gone: the runner says so once it stopped.
    await waitUntil('the stale run to stop', async () =>
      logs.some((line) => line.includes('job interrupted') && line.includes(jobId)),
    );
    const [job] = (await h.db.dataSource.query('SELECT status, rows_written FROM jobs WHERE id = $1', [
      jobId,
    ])) as { status: string; rows_written: string }[];
    expect(braze.accepted.length).toBeGreaterThan(0);
    expect(job).toMatchObject({ status: 'cancelled', rows_written: '0' });
    const watermarks = (await h.db.dataSource.query(
      'SELECT * FROM integration_watermarks WHERE integration_id = $1',
      [integrationId],
    )) as unknown[];
    expect(watermarks).toEqual([]);
  });
});
