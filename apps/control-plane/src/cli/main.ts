#!/usr/bin/env node
import { loadConfigOrExit } from '@pipeline/config';
import { operatorCliConfigSchema } from '../config';
import { createDataSource } from '../data-model';
import { runOperatorCli } from './operator-cli';

async function main(): Promise<number> {
  const config = loadConfigOrExit('pipeline cli', operatorCliConfigSchema);
  const dataSource = createDataSource({ url: config.DATABASE_URL, poolMax: 2 });
  await dataSource.initialize();
  try {
    return await runOperatorCli(
      process.argv.slice(2),
      dataSource,
      {
        out: (text) => process.stdout.write(text.endsWith('\n') ? text : `${text}\n`),
        err: (text) => process.stderr.write(text),
      },
      { credentialKeys: config.CREDENTIALS_ENCRYPTION_KEYS, env: process.env },
    );
  } finally {
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
