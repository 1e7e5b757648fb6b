// Source import benchmark (issue 8): a full read of a 100,000-record stream from the Stripe and
// Shopify look-alike servers (real HTTP on loopback, the vendors' page sizes) into warehouse
// tables, upserted on the key. Prints rows/s end to end and the share spent writing.
//   node tools/bench/source-sync.js [records=100000]
const path = require('node:path');
const root = path.join(__dirname, '../..');
const lib = (name) =>
  require(
    require.resolve(name, {
      paths: [path.join(root, 'apps/delivery/dist'), path.join(root, 'libs/connectors')],
    }),
  );
const { StripeConnector, ShopifyConnector, startStripeLookAlike, startShopifyLookAlike } = require(
  path.join(root, 'libs/connectors/dist'),
);
const { StreamTableWriter } = lib('@pipeline/destinations');
const { createScratchDatabase, DEFAULT_DATABASE_URL } = lib('@pipeline/postgres');
const { stripeRecords, shopifyRecords } = require(
  path.join(root, 'libs/connectors/dist/testing/source-look-alikes'),
);

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
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
