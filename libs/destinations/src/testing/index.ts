// Test look-alikes and fixtures: imported as @pipeline/destinations/testing, never from the
// production entry point.
export {
  lookAlikeCredentials,
  lookAlikeDestination,
  startLookAlikeVendor,
  type AcceptedItem,
  type LookAlikeServer,
  type LookAlikeVendor,
  type RecordedRequest,
  type ScriptedAnswer,
} from '../forwarding/testing/vendor-server';
export { lookAlikes } from '../forwarding/testing/look-alikes';
export type { ContractEvents } from '../forwarding/testing/look-alike';
export {
  bulkyEvents,
  correctedSampleTime,
  oneOfEachType,
  rawSampleEvent,
  sampleEvent,
} from '../forwarding/testing/sample-events';
export { topicRecords, waitFor, type TopicRecord } from './topic-records';
export { parsePrometheusText, sampleSum, samplesOf, type PrometheusSample } from './prometheus-text';
export { startPgBouncer, type PgBouncer, type PgBouncerOptions } from './pgbouncer';
export { warehouseConnectionOf } from './warehouse-connection';
export {
  clickhouseConnectionOf,
  clickhouseTableRows,
  comparableRow,
  comparedColumns,
  postgresTableRows,
} from './warehouse-table-rows';
export {
  clickhouseRowValues,
  startClickHouseWarehouse,
  type ClickHouseWarehouse,
} from './clickhouse-warehouse';
