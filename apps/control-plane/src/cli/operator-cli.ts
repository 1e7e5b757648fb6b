import { Command, InvalidArgumentError } from 'commander';
import type { DataSource } from 'typeorm';
import { isAppError } from '@pipeline/errors';
import { AccountService, accountFeatures } from '../accounts/account.service';
import { ApiKeyService } from '../auth/api-key.service';
import { scopes as allScopes } from '../auth/scopes';
import { WriteKeyService } from '../write-keys/write-key.service';

export interface CliIo {
  out(text: string): void;
  err(text: string): void;
}

const list = (value: string) =>
  value
    .split(',')
    .map((v) => v.trim())
    .filter(Boolean);

function scopeList(value: string): string[] {
  const wanted = value === 'all' ? [...allScopes] : list(value);
  const unknown = wanted.filter((s) => !(allScopes as readonly string[]).includes(s));
  if (wanted.length === 0 || unknown.length > 0) {
    throw new InvalidArgumentError(`expected "all" or a comma-separated list of: ${allScopes.join(', ')}`);
  }
  return wanted;
}

/**
 * The operator CLI: how a new user gets a first account, API key and write key. Keys are
 * printed once, here, and stored only as hashes. `--json` prints one JSON object for scripts.
 */
export function buildOperatorCli(dataSource: DataSource, io: CliIo): Command {
  const accounts = new AccountService(dataSource);
  const apiKeys = new ApiKeyService(dataSource);
  const writeKeys = new WriteKeyService(dataSource);
  const print = (json: boolean | undefined, value: object, human: string) =>
    io.out(json ? JSON.stringify(value) : human);

  const program = new Command('pipeline')
    .description('Operator tasks of the pipeline control plane (uses DATABASE_URL).')
    .exitOverride()
    .configureOutput({ writeOut: io.out, writeErr: io.err });

  const account = program.command('accounts').description('Accounts (tenants)');
  account
    .command('create')
    .description('Create an account')
    .requiredOption('--name <name>', 'display name')
    .option('--features <list>', `comma-separated features: ${accountFeatures.join(', ')}`, list, [])
    .option('--json', 'print JSON')
    .action(async (options: { name: string; features: string[]; json?: boolean }) => {
      const created = await accounts.create(options.name, options.features);
      const value = {
        id: created.id,
        name: created.name,
        features: created.features,
        createdAt: created.createdAt.toISOString(),
      };
      print(
        options.json,
        value,
        `account ${created.id} "${created.name}" features: ${created.features.join(', ') || 'none'}`,
      );
    });
  account
    .command('list')
    .description('List accounts')
    .option('--json', 'print JSON')
    .action(async (options: { json?: boolean }) => {
      const all = (await accounts.list()).map((a) => ({ id: a.id, name: a.name, features: a.features }));
      print(
        options.json,
        all,
        all.map((a) => `${a.id}  ${a.name}  [${a.features.join(', ')}]`).join('\n') || 'no accounts',
      );
    });

  const keys = program.command('api-keys').description('API keys of the management API');
  keys
    .command('create')
    .description('Issue an API key; it is printed once')
    .requiredOption('--account <id>', 'account id')
    .requiredOption(
      '--scopes <list>',
      `"all" or a comma-separated list of: ${allScopes.join(', ')}`,
      scopeList,
    )
    .option('--name <name>', 'what the key is for', 'API key')
    .option('--json', 'print JSON')
    .action(async (options: { account: string; scopes: string[]; name: string; json?: boolean }) => {
      const { apiKey, record } = await apiKeys.issue(options.account, options.name, options.scopes);
      const value = {
        id: record.id,
        accountId: record.accountId,
        name: record.name,
        scopes: record.scopes,
        apiKey,
      };
      print(
        options.json,
        value,
        `API key ${record.id} (${record.scopes.join(', ')})\n${apiKey}\nStore it now: it is not shown again.`,
      );
    });
  keys
    .command('list')
    .description('List the active API keys of an account (prefixes only)')
    .requiredOption('--account <id>', 'account id')
    .option('--json', 'print JSON')
    .action(async (options: { account: string; json?: boolean }) => {
      const all = (await apiKeys.list(options.account)).map((k) => ({
        id: k.id,
        name: k.name,
        keyPrefix: k.keyPrefix,
        scopes: k.scopes,
      }));
      print(
        options.json,
        all,
        all.map((k) => `${k.id}  ${k.keyPrefix}…  ${k.name}  ${k.scopes.join(',')}`).join('\n') || 'no keys',
      );
    });
  keys
    .command('revoke <id>')
    .description('Revoke an API key at once')
    .option('--json', 'print JSON')
    .action(async (id: string, options: { json?: boolean }) => {
      const revoked = await apiKeys.revoke(id);
      print(
        options.json,
        { id: revoked.id, revokedAt: revoked.revokedAt?.toISOString() },
        `API key ${revoked.id} revoked`,
      );
    });

  const write = program.command('write-keys').description('Write keys of the browser SDK');
  write
    .command('create')
    .description('Create a write key; it is printed once')
    .requiredOption('--account <id>', 'account id')
    .requiredOption('--name <name>', 'what the key is for, e.g. the site')
    .option('--allowed-origins <list>', 'comma-separated hostnames (subdomains match)', list, [])
    .option('--json', 'print JSON')
    .action(async (options: { account: string; name: string; allowedOrigins: string[]; json?: boolean }) => {
      await apiKeys.requireAccount(options.account);
      const created = await writeKeys.create(options.account, {
        name: options.name,
        allowedOrigins: options.allowedOrigins,
      });
      const value = {
        id: created.id,
        accountId: options.account,
        name: created.name,
        allowedOrigins: created.allowedOrigins,
        writeKey: created.key,
      };
      print(
        options.json,
        value,
        `write key ${created.id} "${created.name}"\n${created.key}\nStore it now: it is not shown again.`,
      );
    });
  return program;
}

/** Runs the CLI; returns the exit code: 0 done, 1 refused (with the reason on stderr), 2 usage. */
export async function runOperatorCli(
  argv: readonly string[],
  dataSource: DataSource,
  io: CliIo,
): Promise<number> {
  try {
    await buildOperatorCli(dataSource, io).parseAsync([...argv], { from: 'user' });
    return 0;
  } catch (error) {
    const { code, exitCode } = error as { code?: string; exitCode?: number };
    if (code?.startsWith('commander.'))
      return code === 'commander.helpDisplayed' || code === 'commander.version' ? 0 : (exitCode ?? 2);
    io.err(`error: ${isAppError(error) ? `${error.message} (${error.code})` : (error as Error).message}\n`);
    return 1;
  }
}
