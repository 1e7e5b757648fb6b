#!/usr/bin/env node
import { loadConfigOrExit } from '@pipeline/config';
import { defaultWarehouseTimeouts, WarehouseEngines } from '@pipeline/destinations';
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
  try {
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
      },
    );
  } finally {
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
