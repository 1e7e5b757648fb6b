// Source import benchmark: a full read of a 100,000-record stream from the Stripe and
// Shopify look-alike servers (real HTTP on loopback, the vendors' page sizes) into warehouse
// tables, upserted on the key. Prints rows/s end to end and the share spent writing; then the
// Stripe import again as a whole sync job (control plane services, job runner, executor).
// Needs the control plane and connectors built (pnpm exec nx run-many -t build).
//   node tools/bench/source-sync.js [records=100000]
const path = require('node:path');
const root = path.join(__dirname, '../..');
const lib = (name) =>
  require(
    require.resolve(name, {
      paths: [path.join(root, 'apps/delivery/dist'), path.join(root, 'libs/connectors')],
    }),
  );
const { StripeConnector, ShopifyConnector } = require(path.join(root, 'libs/connectors/dist'));
const { startStripeLookAlike, startShopifyLookAlike, stripeRecords, shopifyRecords } = require(
  path.join(root, 'libs/connectors/dist/testing'),
);
const { StreamTableWriter } = lib('@pipeline/destinations');
const { createScratchDatabase, DEFAULT_DATABASE_URL } = lib('@pipeline/postgres');

const total = Number(process.argv[2] ?? 100_000);
const FLUSH_ROWS = 5000;

async function importStream(name, connector, stream, writer, table) {
  const started = process.hrtime.bigint();
  let writing = 0n;
  let buffer = [];
  let rows = 0;
  const flush = async () => {
    const t = process.hrtime.bigint();
    rows += (await writer.write('account_bench', table, 'id', buffer)).written;
    writing += process.hrtime.bigint() - t;
    buffer = [];
  };
  for await (const page of connector.read(stream, { cursor: null })) {
    buffer.push(...page.records);
    if (buffer.length >= FLUSH_ROWS) await flush();
  }
  await flush();
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  console.log(
    `${name.padEnd(28)} ${String(Math.round(rows / seconds)).padStart(7)} rows/s  (${rows} rows in ${seconds.toFixed(1)} s, ${Math.round((100 * Number(writing)) / 1e9 / seconds)}% writing)`,
  );
}

async function main() {
  const db = await createScratchDatabase(
    process.env.DATABASE_URL || DEFAULT_DATABASE_URL,
    'bench source sync',
  );
  const writer = new StreamTableWriter(db.url);
  console.log(`source import: ${total} records per stream, node ${process.version}`);
  const stripe = await startStripeLookAlike();
  stripe.data.set('customers', stripeRecords('customers', total, 1_780_000_000));
  await importStream(
    'stripe customers (100/page)',
    new StripeConnector({ secretKey: stripe.secret, baseUrl: stripe.url }),
    'customers',
    writer,
    'stripe_customers',
  );
  await stripe.close();
  const shopify = await startShopifyLookAlike({ bucketSize: 1e9 });
  shopify.data.set('orders', shopifyRecords('orders', total, new Date()));
  await importStream(
    'shopify orders (250/page)',
    new ShopifyConnector({ shop: 'bench', accessToken: shopify.secret, baseUrl: shopify.url }),
    'orders',
    writer,
    'shopify_orders',
  );
  await shopify.close();
  await writer.close();
  await db.drop();
  await wholeJob();
}

/**
 * The same Stripe import as a sync job, end to end: a source triggered through the control
 * plane's services, claimed by the job runner, read by the connector, upserted by the stream
 * loader, cursors and counts saved, the source's status updated.
 */
async function wholeJob() {
  const cp = (file) => require(path.join(root, 'apps/control-plane/dist', file));
  const { createMigratedScratchDatabase } = cp('scratch-data-source');
  const { AccountService } = cp('accounts/account.service');
  const { createServices } = cp('app');
  const { JobRunner } = cp('jobs/job-runner');
  const { SourceSyncExecutor } = cp('sources/source-sync-executor');
  const { CredentialCipher } = cp('apps/credential-cipher');
  const { createLogger } = lib('@pipeline/logger');
  const keys = `bench:${require('node:crypto').randomBytes(32).toString('base64')}`;
  const control = await createMigratedScratchDatabase('bench sync job');
  const warehouse = await createScratchDatabase(
    process.env.DATABASE_URL || DEFAULT_DATABASE_URL,
    'bench sync job warehouse',
  );
  const stripe = await startStripeLookAlike();
  stripe.data.set('customers', stripeRecords('customers', total, Math.floor(Date.now() / 1000)));
  const logger = createLogger({ service: 'bench', level: 'warn' });
  const services = createServices({ dataSource: control.dataSource, credentialKeys: keys });
  const account = await new AccountService(control.dataSource).create('Bench', []);
  const app = await services.apps.create(account.id, {
    appType: 'stripe',
    displayName: 'Stripe',
    credentials: { secretKey: stripe.secret },
  });
  const writer = new StreamTableWriter(warehouse.url);
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
    new SourceSyncExecutor({
      dataSource: control.dataSource,
      writer,
      logger,
      cipher: new CredentialCipher(keys),
      baseUrls: { stripe: stripe.url },
    }),
  );
  const started = process.hrtime.bigint();
  const source = await services.sources.create(account.id, {
    appId: app.id,
    syncType: 'stripe',
    importTasks: ['customers'],
    runNow: true,
  });
  runner.start();
  let job;
  for (;;) {
    job = await services.jobs.get(account.id, source.dispatchedJob.id);
    if (job.status !== 'queued' && job.status !== 'running') break;
    await new Promise((r) => setTimeout(r, 20));
  }
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  if (job.status !== 'succeeded') throw new Error(`the job ${job.status}: ${JSON.stringify(job.error)}`);
  console.log(
    `${'stripe customers (sync job)'.padEnd(28)} ${String(Math.round(job.rowsWritten / seconds)).padStart(7)} rows/s  (${job.rowsWritten} rows in ${seconds.toFixed(1)} s, job runner + executor end to end)`,
  );
  await runner.stop();
  await writer.close();
  await stripe.close();
  await control.drop();
  await warehouse.drop();
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
