// ClickHouse connections for the warehouse engine: structured fields in, a client out.
export {
  clickhouseClient,
  customerConnectionProblem,
  InvalidClickHouseConnection,
  type ClickHouseClientOptions,
  type ClickHouseGuardOptions,
} from './clickhouse-client';
