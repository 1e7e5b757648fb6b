// ClickHouse connections for the warehouse engine: structured fields in, a client out.
export {
  clickhouseClient,
  customerConnectionProblem,
  InvalidClickHouseConnection,
  type ClickHouseClientOptions,
  type ClickHouseGuardOptions,
} from './clickhouse-client';
export {
  checkClickHouseConnection,
  checkClient,
  classifyClickHouseCheckError,
  clickhouseCheckFailures,
  clickhouseConnectionProblem,
  clickhouseDatabasePattern,
  probeTableName,
  type ClickHouseCheckClient,
  type ClickHouseCheckFailure,
  type ClickHouseCheckOptions,
  type ClickHouseCheckResult,
} from './clickhouse-connection-check';
