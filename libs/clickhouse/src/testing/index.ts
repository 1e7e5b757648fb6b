// Test helpers: imported as @pipeline/clickhouse/testing, never from the production entry point.
// The server itself (chdb-http-server.ts) runs in a child process and is not exported: loading
// chdb here would bind a data directory to the test process.
export {
  startClickHouseTestServer,
  useClickHouseTestServer,
  type ClickHouseTestServer,
  type ClickHouseTestServerOptions,
} from './clickhouse-test-server';
