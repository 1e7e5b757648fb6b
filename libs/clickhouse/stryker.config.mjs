import { mutationConfig } from '../../tools/mutation/base-config.mjs';

// What decides whether a ClickHouse connection may be made and what its check answers: the
// fields of a customer's server, the agent that checks every address it connects to, and the
// failure codes of the connection test. The test server under testing/ is not product code.
export default mutationConfig({
  dir: 'libs/clickhouse',
  mutate: ['libs/clickhouse/src/clickhouse-client.ts', 'libs/clickhouse/src/clickhouse-connection-check.ts'],
  tests: ['src/clickhouse-client.test.ts', 'src/clickhouse-connection-check.test.ts'],
  breakAt: 98,
});
