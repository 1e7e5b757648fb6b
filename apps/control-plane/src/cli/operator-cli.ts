import { Command, InvalidArgumentError } from 'commander';
import type { DataSource } from 'typeorm';
import { isAppError } from '@pipeline/errors';
import type { TenantChangePublisher } from '@pipeline/tenancy';
import { AccountService, accountFeatures } from '../accounts/account.service';
import { ApiKeyService } from '../auth/api-key.service';
import { scopes as allScopes } from '../auth/scopes';
import { WriteKeyService } from '../write-keys/write-key.service';
import { CredentialCipher } from '../apps/credential-cipher';
import { isUuid } from '../http/ids';
import { pageRequest } from '../http/pagination';
import type { RegulationView } from '../regulations/regulation.dto';
import { regulationStatuses, type RegulationStatus } from '../regulations/regulation-types';
import { RegulationService } from '../regulations/regulation.service';
import { WarehouseRegistry, type EngineFor } from '../warehouse-registry/warehouse-registry';
import type { WarehouseMoveView, WarehouseSummary } from '../warehouse-registry/warehouse.dto';
import { WarehouseMoves } from '../warehouse-registry/warehouse-moves';
import { WarehousePlacements } from '../warehouse-registry/warehouse-placements';

export interface CliIo {
  out(text: string): void;
  err(text: string): void;
}

/** What the warehouse commands need besides the database. */
export interface CliOptions {
  /** CREDENTIALS_ENCRYPTION_KEYS: seals a new warehouse's password, opens one to size it. */
  credentialKeys?: string;
  /** Where `--password-env` reads from (the process's environment). */
  env?: Readonly<Record<string, string | undefined>>;
  /** Opens engines to size warehouses; absent: sizes are not shown. */
  engineFor?: EngineFor;
  /** Tells the consumers of placement and connection changes (REDIS_URL); absent: their cache time. */
  tenantChanges?: TenantChangePublisher;
}

const integer = (name: string, min: number, max: number) => (value: string) => {
  const parsed = Number(value);
  if (!/^\d+$/.test(value) || parsed < min || parsed > max)
    throw new InvalidArgumentError(`${name} must be a whole number from ${min} to ${max}`);
  return parsed;
};

function humanWarehouse(w: WarehouseSummary): string {
  const size = w.sizeBytes === null ? 'size unknown' : `${w.sizeBytes} bytes`;
  const detail = w.statusDetail ? ` (${w.statusDetail})` : '';
  // A customer's server holds its own account only: the operator sees whose it is.
  const owner = w.owner === 'customer' ? ` [customer: account ${w.accountId}, app ${w.appId}]` : '';
  return `${w.id}  ${w.name}${w.isDefault ? ' [default]' : ''}${owner}  ${w.engine}  ${w.user}@${w.host}:${w.port}/${w.database}  ${w.accounts} accounts  ${size}  ${w.status}${detail}`;
}

function humanMove(m: WarehouseMoveView): string {
  const copied = Object.entries({ ...m.progress.copy, ...m.progress.drain })
    .map(([table, rows]) => `${table} ${rows}`)
    .join(', ');
  const error = m.error ? `  ${m.error.code}: ${m.error.message}` : '';
  return `${m.id}  account ${m.accountId}  ${m.fromWarehouseId ?? '(deleted)'} -> ${m.toWarehouseId ?? '(deleted)'}  ${m.stage}${copied ? `  copied ${copied}` : ''}${error}`;
}

/** A regulation as the operator sees it: the audit record of any account (never raw ids). */
type OperatorRegulation = RegulationView & { accountId: string };

function regulationStatus(value: string): RegulationStatus {
  const status = value.toUpperCase() as RegulationStatus;
  if (!regulationStatuses.includes(status))
    throw new InvalidArgumentError(`expected one of: ${regulationStatuses.join(', ')}`);
  return status;
}

/** Targets by status, e.g. "5 targets: 3 done, 1 forwarded, 1 failed". */
function targetCounts(r: RegulationView): string {
  if (r.targets.length === 0) return 'no targets';
  const counts = new Map<string, number>();
  for (const t of r.targets) counts.set(t.status, (counts.get(t.status) ?? 0) + 1);
  const parts = [...counts].map(([status, n]) => `${n} ${status}`).join(', ');
  return `${r.targets.length} target${r.targets.length === 1 ? '' : 's'}: ${parts}`;
}

function humanRegulation(r: OperatorRegulation): string {
  return `${r.id}  account ${r.accountId}  ${r.regulationType}  ${r.subjectCount} ${r.subjectType}  ${r.overallStatus}  created ${r.createdAt}  ${targetCounts(r)}`;
}

function humanRegulationDetail(r: OperatorRegulation): string {
  const lines = [
    `regulation ${r.id} of account ${r.accountId}`,
    `  ${r.regulationType}, ${r.subjectCount} ${r.subjectType} subject${r.subjectCount === 1 ? '' : 's'}, ${r.overallStatus}`,
    `  created ${r.createdAt}, cut-off ${r.cutoff ?? 'none'}, finished ${r.finishedAt ?? 'not yet'}`,
    ...r.targets.map((t) => {
      const error = t.lastError ? `  ${t.lastError.code}: ${t.lastError.message}` : '';
      const what = t.appType ? ` (${t.appType})` : '';
      return `  ${t.target}  ${t.name}${what}  ${t.status}  attempts ${t.attempts}${error}`;
    }),
  ];
  if (r.targets.length === 0) lines.push('  no targets');
  return lines.join('\n');
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
export function buildOperatorCli(dataSource: DataSource, io: CliIo, options: CliOptions = {}): Command {
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

  // Without the keys only sealing or opening a password fails (`add`, sizes): the rest work.
  const noKeys = () => {
    throw new Error('CREDENTIALS_ENCRYPTION_KEYS is not set: warehouse passwords cannot be sealed or opened');
  };
  const sealer = options.credentialKeys
    ? new CredentialCipher(options.credentialKeys)
    : { seal: noKeys, open: noKeys };
  const registry = () =>
    new WarehouseRegistry(dataSource, sealer, {
      engineFor: options.engineFor,
      tenantChanges: options.tenantChanges,
    });
  const warehouses = program.command('warehouses').description('Warehouses accounts are placed on');
  warehouses
    .command('add')
    .description('Add a platform warehouse; its password is read from an environment variable')
    .requiredOption('--name <name>', 'unique name: lower-case letters, digits, _ and -')
    .option('--engine <engine>', 'postgres or clickhouse', 'postgres')
    .requiredOption('--host <host>', 'host name or IP address')
    .option(
      '--port <port>',
      'port (default: 5432; ClickHouse 8123 with --tls-mode disable, else 8443)',
      integer('--port', 1, 65535),
    )
    .requiredOption('--database <database>', 'database name')
    .requiredOption('--user <user>', 'user name')
    .requiredOption(
      '--password-env <variable>',
      'the environment variable holding the password (never the password itself: argv is visible to every user of the host)',
    )
    .option('--tls-mode <mode>', 'disable, require or verify-full', 'verify-full')
    .option(
      '--max-connections <n>',
      'connections one process opens at most',
      integer('--max-connections', 1, 1000),
      10,
    )
    .option('--default', 'make it the default: new accounts are placed on it')
    .option('--json', 'print JSON')
    .action(
      async (o: {
        name: string;
        engine: string;
        host: string;
        port?: number;
        database: string;
        user: string;
        passwordEnv: string;
        tlsMode: string;
        maxConnections: number;
        default?: boolean;
        json?: boolean;
      }) => {
        const password = (options.env ?? {})[o.passwordEnv];
        if (password === undefined) throw new Error(`the environment variable ${o.passwordEnv} is not set`);
        const created = await registry().add({
          name: o.name,
          engine: o.engine,
          host: o.host,
          ...(o.port === undefined ? {} : { port: o.port }),
          database: o.database,
          user: o.user,
          password,
          tlsMode: o.tlsMode,
          maxConnections: o.maxConnections,
          isDefault: o.default ?? false,
        });
        print(
          o.json,
          created,
          `warehouse ${created.id} "${created.name}" ${created.engine} ${created.user}@${created.host}:${created.port}/${created.database}${created.isDefault ? ' [default]' : ''}`,
        );
      },
    );
  warehouses
    .command('update <warehouse>')
    .description("Change a warehouse's connection (id or name): a moved host, a rotated password")
    .option('--host <host>', 'host name or IP address')
    .option('--port <port>', 'port', integer('--port', 1, 65535))
    .option('--database <database>', 'database name')
    .option('--user <user>', 'user name')
    .option(
      '--password-env <variable>',
      'the environment variable holding the password: required with a new --host, --port or --tls-mode (the stored one goes only to the server it was entered for)',
    )
    .option('--tls-mode <mode>', 'disable, require or verify-full')
    .option(
      '--max-connections <n>',
      'connections one process opens at most',
      integer('--max-connections', 1, 1000),
    )
    .option('--json', 'print JSON')
    .action(
      async (
        warehouse: string,
        o: {
          host?: string;
          port?: number;
          database?: string;
          user?: string;
          passwordEnv?: string;
          tlsMode?: string;
          maxConnections?: number;
          json?: boolean;
        },
      ) => {
        let password: string | undefined;
        if (o.passwordEnv !== undefined) {
          password = (options.env ?? {})[o.passwordEnv];
          if (password === undefined) throw new Error(`the environment variable ${o.passwordEnv} is not set`);
        }
        const { json, passwordEnv: _variable, ...fields } = o;
        const updated = await registry().update(warehouse, {
          ...fields,
          ...(password === undefined ? {} : { password }),
        });
        print(
          json,
          updated,
          `warehouse ${updated.id} "${updated.name}" ${updated.user}@${updated.host}:${updated.port}/${updated.database}`,
        );
      },
    );
  warehouses
    .command('list')
    .description("List warehouses with their accounts, the accounts' storage and status")
    .option('--json', 'print JSON')
    .action(async (o: { json?: boolean }) => {
      const all = await registry().list();
      print(o.json, all, all.map(humanWarehouse).join('\n') || 'no warehouses');
    });
  warehouses
    .command('set-default <warehouse>')
    .description('Make a warehouse (id or name) the one new accounts are placed on')
    .option('--json', 'print JSON')
    .action(async (warehouse: string, o: { json?: boolean }) => {
      const updated = await registry().setDefault(warehouse);
      print(o.json, updated, `warehouse ${updated.id} "${updated.name}" is the default`);
    });
  warehouses
    .command('check <warehouse>')
    .description(
      'Probe a warehouse (id or name) now and record what it met: active, unavailable or misconfigured',
    )
    .option('--json', 'print JSON')
    .action(async (warehouse: string, o: { json?: boolean }) => {
      const checked = await registry().check(warehouse);
      const detail = checked.statusDetail ? ` (${checked.statusDetail})` : '';
      print(o.json, checked, `warehouse ${checked.id} "${checked.name}" ${checked.status}${detail}`);
    });
  warehouses
    .command('accounts <warehouse>')
    .description('List the accounts placed on a warehouse (id or name)')
    .option('--json', 'print JSON')
    .action(async (warehouse: string, o: { json?: boolean }) => {
      const placed = await registry().accountsOf(warehouse);
      print(
        o.json,
        placed,
        placed.map((a) => `${a.accountId}  ${a.accountName}  ${a.schema}  epoch ${a.epoch}`).join('\n') ||
          'no accounts',
      );
    });
  warehouses
    .command('place <account-id>')
    .description(
      'Re-place an account on another warehouse WITHOUT copying its data (for a warehouse that is gone for good): its tables on the old one are left behind, unread',
    )
    .requiredOption('--to <warehouse>', 'the warehouse (id or name) its events load into from now on')
    .option('--abandon-data', "required: says the account's data on its current warehouse is left behind")
    .option('--json', 'print JSON')
    .action(async (accountId: string, o: { to: string; abandonData?: boolean; json?: boolean }) => {
      const warehouseRegistry = registry();
      const placed = await new WarehousePlacements(
        dataSource,
        warehouseRegistry,
        options.tenantChanges,
      ).placeAbandoningData(o.to, {
        accountId,
        abandonData: o.abandonData === true,
      });
      const left = placed.abandoned
        ? `; its data stays in schema ${placed.abandoned.schema} of warehouse ${placed.abandoned.warehouseId}, unread`
        : '';
      print(
        o.json,
        placed,
        `account ${placed.accountId} placed on warehouse ${placed.warehouseId} (schema ${placed.schema}, epoch ${placed.epoch})${left}`,
      );
    });
  warehouses
    .command('delete <warehouse>')
    .description(
      "Delete a warehouse's entry (id or name) that holds no account; the server's data is not touched",
    )
    .option('--json', 'print JSON')
    .action(async (warehouse: string, o: { json?: boolean }) => {
      const warehouseRegistry = registry();
      const found = await warehouseRegistry.find(warehouse);
      await warehouseRegistry.remove(found.id);
      print(
        o.json,
        { id: found.id, name: found.name, deleted: true },
        `warehouse ${found.id} "${found.name}" deleted`,
      );
    });
  const moves = () => {
    const warehouseRegistry = registry();
    return new WarehouseMoves(
      dataSource,
      warehouseRegistry,
      new WarehousePlacements(dataSource, warehouseRegistry, options.tenantChanges),
      options.tenantChanges ? { tenantChanges: options.tenantChanges } : {},
    );
  };
  warehouses
    .command('move <account-id>')
    .description(
      "Move an account's warehouse data to another platform warehouse, online; the control plane's job runner runs it",
    )
    .requiredOption('--to <warehouse>', 'the target warehouse (id or name)')
    .option('--json', 'print JSON')
    .action(async (accountId: string, o: { to: string; json?: boolean }) => {
      const started = await moves().start({ accountId, toWarehouse: o.to });
      print(o.json, started, `move ${started.id} of account ${started.accountId} queued`);
    });
  warehouses
    .command('cancel-move <move-id>')
    .description(
      'Cancel a warehouse move that has not finished: before its cut-over the account stays on its source, after it on the target with the source schema kept',
    )
    .option('--json', 'print JSON')
    .action(async (moveId: string, o: { json?: boolean }) => {
      const cancelled = await moves().cancel(moveId);
      print(o.json, cancelled, `move ${cancelled.id} of account ${cancelled.accountId} cancelled`);
    });
  warehouses
    .command('moves')
    .description('List warehouse moves, newest first, with their stage and rows copied per table')
    .option('--json', 'print JSON')
    .action(async (o: { json?: boolean }) => {
      const all = await moves().list();
      print(o.json, all, all.map(humanMove).join('\n') || 'no moves');
    });

  // The audit of every account's regulations, as the operator API answers it
  // (GET /api/v1/operator/regulations): statuses per target, never raw ids.
  const regulationService = () => new RegulationService(dataSource, sealer, options.tenantChanges);
  const regulations = program
    .command('regulations')
    .description("Privacy regulations of every account: each target's status (docs/privacy.md)");
  regulations
    .command('list')
    .description('List regulations, newest first')
    .option('--account <id>', "only this account's")
    .option(
      '--status <status>',
      `an overall status: ${regulationStatuses.join(', ')} (any case)`,
      regulationStatus,
    )
    .option('--limit <n>', 'how many', integer('--limit', 1, 100), 100)
    .option('--offset <n>', 'how many newer ones to skip', integer('--offset', 0, 1_000_000_000), 0)
    .option('--json', 'print JSON')
    .action(
      async (o: {
        account?: string;
        status?: RegulationStatus;
        limit: number;
        offset: number;
        json?: boolean;
      }) => {
        if (o.account !== undefined && !isUuid(o.account))
          throw new Error(`--account must be an account id (a UUID): ${o.account}`);
        const page = await regulationService().list(
          o.account ?? null,
          o.status ? { status: o.status } : {},
          pageRequest(o.limit, o.offset),
        );
        const all = page.data as OperatorRegulation[];
        const more =
          page.pagination.total > o.offset + all.length
            ? `\n${o.offset + 1}-${o.offset + all.length} of ${page.pagination.total}: --offset ${o.offset + all.length} for the next`
            : '';
        print(o.json, page, (all.map(humanRegulation).join('\n') || 'no regulations') + more);
      },
    );
  regulations
    .command('show <regulation-id>')
    .description('One regulation of any account, with each target: status, attempts, last error')
    .option('--json', 'print JSON')
    .action(async (id: string, o: { json?: boolean }) => {
      const regulation = (await regulationService().get(null, id)) as OperatorRegulation;
      print(o.json, regulation, humanRegulationDetail(regulation));
    });
  return program;
}

/** Runs the CLI; returns the exit code: 0 done, 1 refused (with the reason on stderr), 2 usage. */
export async function runOperatorCli(
  argv: readonly string[],
  dataSource: DataSource,
  io: CliIo,
  options: CliOptions = {},
): Promise<number> {
  try {
    await buildOperatorCli(dataSource, io, options).parseAsync([...argv], { from: 'user' });
    return 0;
  } catch (error) {
    const { code, exitCode } = error as { code?: string; exitCode?: number };
    if (code?.startsWith('commander.'))
      return code === 'commander.helpDisplayed' || code === 'commander.version' ? 0 : (exitCode ?? 2);
    io.err(`error: ${isAppError(error) ? `${error.message} (${error.code})` : (error as Error).message}\n`);
    return 1;
  }
}
