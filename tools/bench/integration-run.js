// Integration run and usage benchmark: an account's warehouse with N
// identified users (default 100,000), sent to a Braze look-alike by a `user_attributes`
// integration run (job runner, executor, warehouse reads in batches, the real Braze client,
// watermarks), then a rerun with nothing new, then the usage summary of that account (which
// meters today first). Prints rows/s and milliseconds.
//   node tools/bench/integration-run.js [users=100000]
// Needs the workspace built (pnpm exec nx run-many -t build).
const path = require('node:path');
const { randomBytes } = require('node:crypto');
const root = path.join(__dirname, '../..');
const cp = (file) => require(path.join(root, 'apps/control-plane/dist', file));
const lib = (name) => require(require.resolve(name, { paths: [path.join(root, 'apps/control-plane/dist')] }));

const total = Number(process.argv[2] ?? 100_000);

async function main() {
  const { WarehouseWriter } = lib('@pipeline/destinations');
  const { startLookAlikeVendor, lookAlikeCredentials } = lib('@pipeline/destinations/testing');
  const { warehouseTables } = lib('@pipeline/events');
  const { createScratchDatabase, DEFAULT_DATABASE_URL } = lib('@pipeline/postgres');
  const { warehouseSchemaFor } = lib('@pipeline/tenancy');
  const { createLogger } = lib('@pipeline/logger');
  const { createMigratedScratchDatabase } = cp('scratch-data-source');
  const { AccountService } = cp('accounts/account.service');
  const { createServices } = cp('app');
  const { JobRunner } = cp('jobs/job-runner');
  const { IntegrationRunExecutor } = cp('integrations/integration-run-executor');
  const { CredentialCipher } = cp('apps/credential-cipher');
  const { WarehouseReader } = cp('warehouse-access/warehouse-reader');
  const { PgQueryMeter } = cp('warehouse-access/query-meter');

  const keys = `bench:${randomBytes(32).toString('base64')}`;
  const control = await createMigratedScratchDatabase('bench integration run');
  const warehouseDb = await createScratchDatabase(
    process.env.DATABASE_URL || DEFAULT_DATABASE_URL,
    'bench integration run warehouse',
  );
  const braze = await startLookAlikeVendor('braze');
  const logger = createLogger({ service: 'bench', level: 'warn' });
  const reader = new WarehouseReader(warehouseDb.url, { meter: new PgQueryMeter(control.dataSource) });
  const services = createServices({
    dataSource: control.dataSource,
    credentialKeys: keys,
    warehouse: reader,
  });
  const account = await new AccountService(control.dataSource).create('Bench', []);

  const writer = new WarehouseWriter(warehouseDb.url);
  const empty = Object.fromEntries(Object.keys(warehouseTables.users).map((c) => [c, null]));
  const at = new Date(Date.now() - 60_000).toISOString();
  let seeded = process.hrtime.bigint();
  for (let from = 0; from < total; from += 5000) {
    const rows = [];
    for (let i = from; i < Math.min(total, from + 5000); i += 1) {
      rows.push({
        table: 'users',
        row: {
          ...empty,
          message_id: `bench-${i}`,
          user_id: `user-${i}`,
          anonymous_id: `anon-${i}`,
          traits: { email: `user${i}@example.com`, plan: i % 3 === 0 ? 'pro' : 'free', seats: i % 50 },
          timestamp: at,
          received_at: at,
        },
      });
    }
    await writer.write(warehouseSchemaFor(account.id), rows);
  }
  seeded = Number(process.hrtime.bigint() - seeded) / 1e9;

  const app = await services.apps.create(account.id, {
    appType: 'braze',
    displayName: 'Braze',
    credentials: lookAlikeCredentials.braze,
    config: { restEndpoint: 'https://rest.iad-01.braze.com' },
  });
  const integration = await services.integrations.create(account.id, {
    destinationAppId: app.id,
    dataType: 'users',
    config: { global: {}, tasks: [{ task_type: 'user_attributes' }] },
    schedule: { frequencyValue: 1, frequencyUnit: 'days', rollingWindowDays: 7 },
  });
  const runner = new JobRunner({
    dataSource: control.dataSource,
    logger,
    concurrency: 1,
    pollIntervalMs: 20,
    heartbeatIntervalMs: 5000,
    staleAfterMs: 60_000,
    maxAttempts: 1,
    retryBaseMs: 1000,
    retryMaxMs: 1000,
  }).register(
    new IntegrationRunExecutor({
      dataSource: control.dataSource,
      warehouse: reader,
      cipher: new CredentialCipher(keys),
      jobs: services.jobs,
      logger,
      baseUrls: { braze: braze.url },
      dependencyRetryMs: 1000,
    }),
  );
  runner.start();
  const runOnce = async () => {
    const started = process.hrtime.bigint();
    const queued = await services.integrations.triggerRun(account.id, integration.id);
    let job;
    for (;;) {
      job = await services.jobs.get(account.id, queued.id);
      if (job.status !== 'queued' && job.status !== 'running') break;
      await new Promise((r) => setTimeout(r, 20));
    }
    if (job.status !== 'succeeded') throw new Error(`the run ${job.status}: ${JSON.stringify(job.error)}`);
    return { job, seconds: Number(process.hrtime.bigint() - started) / 1e9 };
  };

  console.log(`integration run: ${total} identified users to the Braze look-alike, node ${process.version}`);
  console.log(`  (warehouse seeded in ${seeded.toFixed(1)} s)`);
  const first = await runOnce();
  console.log(
    `user_attributes, first run   ${String(Math.round(first.job.rowsWritten / first.seconds)).padStart(7)} rows/s  (${first.job.rowsWritten} sent in ${first.seconds.toFixed(1)} s, ${braze.requests.length} Braze requests)`,
  );
  const rerun = await runOnce();
  console.log(
    `rerun, nothing changed       ${String(rerun.job.rowsRead).padStart(7)} rows read (${(rerun.seconds * 1000).toFixed(0)} ms)`,
  );
  await runner.stop();

  const timings = [];
  for (let i = 0; i < 5; i += 1) {
    const started = process.hrtime.bigint();
    await services.usage.summary(account.id, '30');
    timings.push(Number(process.hrtime.bigint() - started) / 1e6);
  }
  timings.sort((a, b) => a - b);
  const usage = await services.usage.daily(account.id, '1');
  console.log(
    `usage summary (meters today) median ${timings[2].toFixed(0)} ms over 5; today: ${usage[0].storageGb} GB stored, ${usage[0].queryTbProcessed} TB read by the service, ${usage[0].computeSeconds} compute s`,
  );

  await writer.close();
  await reader.close();
  await braze.close();
  await control.drop();
  await warehouseDb.drop();
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
