// ClickHouse connections for the warehouse engine: structured fields in, a client out.
export {
  checkClickHouseConnection,
  classifyClickHouseCheckError,
  clickhouseCheckFailures,
  clickhouseConnectionProblem,
  clickhouseDatabasePattern,
  guardedCheckClient,
  InvalidClickHouseConnection,
  probeTableName,
  type ClickHouseCheckClient,
  type ClickHouseCheckFailure,
  type ClickHouseCheckOptions,
  type ClickHouseCheckResult,
  type ClickHouseGuardOptions,
} from './clickhouse-connection-check';
