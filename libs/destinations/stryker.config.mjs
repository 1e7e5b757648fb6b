import { functionRanges, mutationConfig } from '../../tools/mutation/base-config.mjs';

const src = 'libs/destinations/src';
const forwarding = `${src}/forwarding`;
const warehouse = `${src}/warehouse`;
const postgres = `${warehouse}/postgres`;

/** Pure logic whose mistake would lose data, mix tenants or open the network, beyond the mappings. */
const delivery = [
  // Which events of a send went, which are retried (with the vendor's wait) and which are
  // dead-lettered; how events are packed into requests; the vendors' dedupe keys.
  `${forwarding}/batch-delivery.ts`,
  `${forwarding}/vendor-request.ts`,
  `${forwarding}/delivery-failure.ts`,
  `${forwarding}/request-batching.ts`,
  `${forwarding}/dedupe-keys.ts`,
  // Tenant-configured settings and the hosts a tenant's credentials may travel to.
  `${forwarding}/destination-settings.ts`,
  `${forwarding}/vendors/braze/braze-endpoint.ts`,
  `${forwarding}/vendors/webhook/webhook-url.ts`,
  `${forwarding}/vendors/webhook/webhook-signature.ts`,
  // When a failed record is tried again, and the tenant lookups the consumers use.
  `${src}/retry-schedule.ts`,
  `${src}/tenant-directory.ts`,
  // What a tracking plan's policy does with an event at each destination (strip, keep out).
  `${src}/plan-decisions.ts`,
  // When a tenant function runs, is disabled and holds its events, and the reasons it gives.
  `${src}/functions/function-step.ts`,
  // How a dead-letter replay is cut into sends a broker accepts; the rest of the file reads
  // records, writes headers and sends, left to the integration tests with Kafka.
  ...functionRanges(`${src}/dead-letters.ts`, ['replayBytesOf', 'replaySends']),
];

/** The warehouse row builder: rows per table, COPY text, identifiers, DDL and error verdicts. */
const warehouseRows = [
  `${warehouse}/warehouse-row-batches.ts`,
  `${warehouse}/event-order.ts`,
  `${postgres}/warehouse-statements.ts`,
  `${warehouse}/copy-text.ts`,
  `${postgres}/warehouse-ddl.ts`,
  `${warehouse}/warehouse-errors.ts`,
  `${warehouse}/stream-table-columns.ts`,
  // How a process shares its warehouse connections between warehouses.
  `${warehouse}/warehouse-connection-budget.ts`,
  // Which warehouse an account's rows go to, and when a failing warehouse is tried again.
  `${warehouse}/warehouse-directory.ts`,
  `${warehouse}/warehouse-breaker.ts`,
  // The storage figure an account's own server answers, bounded before it is metered.
  `${warehouse}/storage-bytes.ts`,
  // The ClickHouse engine's rows, tables and error verdicts.
  `${warehouse}/clickhouse/clickhouse-rows.ts`,
  `${warehouse}/clickhouse/clickhouse-ddl.ts`,
  `${warehouse}/clickhouse/clickhouse-errors.ts`,
  // How a move between engines reads and prints rows: COPY fields, types and the day hashes.
  `${warehouse}/copy-fields.ts`,
  `${warehouse}/clickhouse/clickhouse-table-copy.ts`,
];

const config = mutationConfig({
  dir: 'libs/destinations',
  mutate: [
    // The forwarders' field mappings, one file per vendor: how our events become its payload,
    // with the tables of trait and event names they map. The forwarder beside each talks HTTP
    // and is left to the integration tests; what it decides is in the files below.
    `${forwarding}/vendors/*/*-mapping.ts`,
    `${forwarding}/event-fields.ts`,
    `${forwarding}/hashed-identity.ts`,
    `${forwarding}/segment-message.ts`,
    ...delivery,
    ...warehouseRows,
  ],
  // Pure tests: event in, vendor payload out; the delivery ledger against an in-process fetch;
  // rows and SQL text without a database. The forwarders' tests against the look-alike vendor
  // servers, and the warehouse's against PostgreSQL, stay the integration tests.
  tests: [
    'src/forwarding/vendors/*/*-mapping.test.ts',
    'src/forwarding/vendors/braze/braze-endpoint.test.ts',
    'src/forwarding/vendors/webhook/webhook-url.test.ts',
    'src/forwarding/vendors/webhook/webhook-signature.test.ts',
    'src/forwarding/event-fields.test.ts',
    'src/forwarding/hashed-identity.test.ts',
    'src/forwarding/segment-message.test.ts',
    'src/forwarding/batch-delivery.test.ts',
    'src/forwarding/vendor-request.test.ts',
    'src/forwarding/delivery-failure.test.ts',
    'src/forwarding/request-batching.test.ts',
    'src/forwarding/dedupe-keys.test.ts',
    'src/forwarding/destination-settings.test.ts',
    'src/retry-schedule.test.ts',
    'src/tenant-directory.test.ts',
    'src/plan-decisions.test.ts',
    'src/functions/function-step.test.ts',
    'src/dead-letters.test.ts',
    'src/warehouse/warehouse-row-batches.test.ts',
    'src/warehouse/postgres/warehouse-statements.test.ts',
    'src/warehouse/copy-text.test.ts',
    'src/warehouse/postgres/warehouse-migrations.test.ts',
    'src/warehouse/warehouse-errors.test.ts',
    'src/warehouse/stream-table-columns.test.ts',
    'src/warehouse/warehouse-connection-budget.test.ts',
    'src/warehouse/event-order.test.ts',
    'src/warehouse/warehouse-directory.test.ts',
    'src/warehouse/warehouse-breaker.test.ts',
    'src/warehouse/storage-bytes.test.ts',
    'src/warehouse/clickhouse/clickhouse-rows.test.ts',
    'src/warehouse/clickhouse/clickhouse-ddl.test.ts',
    'src/warehouse/clickhouse/clickhouse-errors.test.ts',
    'src/warehouse/copy-fields.test.ts',
    'src/warehouse/clickhouse/clickhouse-table-copy.test.ts',
  ],
  breakAt: 97,
});

// Every mapping test loads the event contract, whose validator compiles its schema, so a mutant
// runs only the test files that import its file: a vendor's mutant runs that vendor's tests, not
// every file (about four times fewer files loaded in a run).
export default { ...config, jest: { ...config.jest, enableFindRelatedTests: true } };
