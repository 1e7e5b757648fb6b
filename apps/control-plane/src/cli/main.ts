#!/usr/bin/env node
import { loadConfigOrExit } from '@pipeline/config';
import { defaultWarehouseTimeouts, WarehouseEngines } from '@pipeline/destinations';
import { createLogger } from '@pipeline/logger';
import { closeRedis, createRedis, redisConnectionOf } from '@pipeline/redis';
import { TenantChangePublisher } from '@pipeline/tenancy';
import { operatorCliConfigSchema } from '../config';
import { createDataSource } from '../data-model';
import { runOperatorCli } from './operator-cli';

async function main(): Promise<number> {
  const config = loadConfigOrExit('pipeline cli', operatorCliConfigSchema);
  const dataSource = createDataSource({ url: config.DATABASE_URL, poolMax: 2 });
  await dataSource.initialize();
  // Sizes in `warehouses list` and `warehouses check`: a small pool per warehouse, of its engine, closed when the command ends.
  const engines = WarehouseEngines.open(
    { processMaxConnections: 8, idleMs: 10_000 },
    { postgres: { timeouts: defaultWarehouseTimeouts }, clickhouse: { timeouts: defaultWarehouseTimeouts } },
  );
  // Placement and connection changes are broadcast as the control plane's own are, so the
  // consumers act on `warehouses place` or `update` at once rather than after their cache time.
  // On standard error: standard output is the commands' answer (`--json` is parsed by scripts).
  const logger = createLogger({
    service: 'pipeline-cli',
    level: config.LOG_LEVEL,
    format: config.LOG_FORMAT,
    stream: process.stderr,
  });
  const redisConnection = redisConnectionOf(config);
  const redis = redisConnection
    ? createRedis(redisConnection, { logger, keyPrefix: 'control-plane:' })
    : null;
  try {
    await redis?.connect().catch((error: Error) =>
      logger.warn('redis not reachable: changes reach the consumers within their cache time', {
        error: error.message,
      }),
    );
    return await runOperatorCli(
      process.argv.slice(2),
      dataSource,
      {
        out: (text) => process.stdout.write(text.endsWith('\n') ? text : `${text}\n`),
        err: (text) => process.stderr.write(text),
      },
      {
        credentialKeys: config.CREDENTIALS_ENCRYPTION_KEYS,
        env: process.env,
        engineFor: (connection) => engines.for(connection),
        tenantChanges: new TenantChangePublisher(redis, logger),
      },
    );
  } finally {
    if (redis) await closeRedis(redis);
    await engines.close();
    await dataSource.destroy();
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`error: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);
