import { randomUUID } from 'node:crypto';
import type { DataSource, EntityManager } from 'typeorm';
import { AppError } from '@pipeline/errors';
import { warehouseConnectionFromUrl, type WarehouseEngine } from '@pipeline/destinations';
import type { Logger } from '@pipeline/logger';
import {
  warehouseSchemaFor,
  type TenantChangePublisher,
  type WarehouseConnection,
  type WarehouseEngineName,
  type WarehouseTlsMode,
} from '@pipeline/tenancy';
import {
  badRequest,
  conflict,
  invalidField,
  isCredentialsUnreadable,
  unprocessable,
  type UnreadableReason,
} from '../http/api-errors';
import { isUuid } from '../http/ids';
import {
  AccountWarehouseEntity,
  WarehouseEntity,
  warehouseStatuses,
  type WarehouseStatus,
} from './warehouse.entity';
import type { PlacedAccount, WarehouseSummary, WarehouseView } from './warehouse.dto';
import {
  DEFAULT_MAX_CONNECTIONS,
  defaultPortOf,
  fieldProblems,
  MAX_STATUS_DETAIL_LENGTH,
  viewOf,
  type NewWarehouse,
} from './warehouse-fields';

/**
 * The credential cipher as the registry uses it (apps/credential-cipher.ts): structural, so the
 * warehouses sit below the features that hold app credentials.
 */
/** A connection's stored fields: WAREHOUSE_URL is kept as its parts, never as the URL. */
const fieldsOf = ({ engine, host, port, database, user, password, tlsMode }: WarehouseConnection) => ({
  engine,
  host,
  port,
  database,
  user,
  password,
  tlsMode,
});

export interface PasswordSealer {
  seal(value: Record<string, unknown>, associatedData: string): { ciphertext: string; keyId: string };
  open(sealed: { ciphertext: string; keyId: string }, associatedData: string): Record<string, unknown>;
}

/** Opens an engine on a warehouse (WarehouseEngines.for in the process; tests give their own). */
export type EngineFor = (connection: WarehouseConnection) => WarehouseEngine;

export const DEFAULT_WAREHOUSE_NAME = 'default';
/**
 * A customer's server gets few connections per process: it is sized for the customer's own
 * use, and an account's load fits in a handful.
 */
export const CUSTOMER_MAX_CONNECTIONS = 5;
/** The registry name of the warehouse an app is: stable, and unlike any operator's name. */
export const customerWarehouseName = (appId: string) => `app-${appId}`;
export const warehouseAppInUse = (appId: string, why: string) =>
  conflict('warehouse_app_in_use', `App ${appId} is the account's warehouse: ${why}`);

/** The fields of a customer's warehouse app (postgres_warehouse, clickhouse_warehouse) the registry keeps. */
export interface CustomerWarehouseApp {
  appId: string;
  accountId: string;
  /** The app type's engine; an app keeps its type, so its row keeps its engine. */
  engine: WarehouseEngineName;
  host: string;
  port: number;
  database: string;
  user: string;
  password: string;
  tlsMode: WarehouseTlsMode;
  schema: string;
}
export const warehouseNotFound = (idOrName: string) =>
  new AppError(404, 'warehouse_not_found', `No warehouse ${idOrName}`);
export const accountNotFound = (accountId: string) =>
  new AppError(404, 'account_not_found', `No account with id ${accountId}`);
export const warehouseInUse = (name: string, accounts?: number) =>
  conflict(
    'warehouse_in_use',
    `Warehouse ${name} holds ${accounts === undefined ? 'accounts' : `${accounts} account(s)`}: move them off it, or re-place them with abandonData, first`,
  );
export const warehouseInMove = (name: string, moveId?: string) =>
  conflict(
    'warehouse_in_move',
    `Warehouse ${name} is a side of an active move${moveId ? ` (${moveId})` : ''}: wait for it to end`,
  );
/** No default warehouse: the control plane has not started once since the upgrade. */
export const noDefaultWarehouse = () =>
  new AppError(
    503,
    'warehouse_not_configured',
    'No default warehouse yet: it is created from WAREHOUSE_URL when the control plane starts',
  );

/** The status detail of a warehouse whose password the keys cannot open; its prefix marks it. */
const UNREADABLE_DETAIL_PREFIX = 'credentials_unreadable: ';
const unreadableDetail = (keyId: string, reason: UnreadableReason) =>
  `${UNREADABLE_DETAIL_PREFIX}${
    reason === 'key_missing'
      ? `the password is sealed with key ${keyId}, which the control plane's CREDENTIALS_ENCRYPTION_KEYS does not hold`
      : `the password is sealed with key ${keyId}, and the control plane's key of that name does not open it (made anew?)`
  }; restore the key, or set the password again (warehouses update)`;
const isUnreadableDetail = (detail: string | null) => detail?.startsWith(UNREADABLE_DETAIL_PREFIX) === true;

/**
 * 422 `secret_required_for_new_host`, as tenant apps answer it: the change moves where the
 * stored password is sent, and the request does not enter it again.
 */
const passwordRequiredForNewServer = (fields: readonly string[]) =>
  unprocessable(
    'secret_required_for_new_host',
    `A change of ${fields.join(', ')} moves where the stored password is sent; enter the password again in the same request (a stored password is sent only to the server it was entered for)`,
    fields.map((field) => ({
      path: `body.${field}`,
      message: 'changes the server the stored password is sent to',
    })),
  );

/** The password is bound to its warehouse: a ciphertext copied onto another row does not open. */
const associatedDataOf = (warehouseId: string) => `warehouse:${warehouseId}`;

const UNIQUE_VIOLATION = '23505';
const FOREIGN_KEY_VIOLATION = '23503';
const CHECK_VIOLATION = '23514';
const isUniqueViolation = (error: unknown, constraint: string) => {
  const driver = (error as { driverError?: { code?: string; constraint?: string } }).driverError;
  return driver?.code === UNIQUE_VIOLATION && driver.constraint === constraint;
};

/**
 * Places the account on the current default warehouse, in the caller's transaction, unless it is
 * placed already. Returns the warehouse it is on now, or null when there is no default yet (the
 * next start's bootstrap, or the first resolve, places it).
 */
export async function placeOnDefault(manager: EntityManager, accountId: string): Promise<string | null> {
  await manager.query(
    `INSERT INTO account_warehouses (account_id, warehouse_id, schema)
     SELECT $1, id, $2 FROM warehouses WHERE is_default
     ON CONFLICT (account_id) DO NOTHING`,
    [accountId, warehouseSchemaFor(accountId)],
  );
  const rows = (await manager.query('SELECT warehouse_id FROM account_warehouses WHERE account_id = $1', [
    accountId,
  ])) as { warehouse_id: string }[];
  return rows[0]?.warehouse_id ?? null;
}

/** The connection fields an update may change; absent ones are kept. */
export type WarehouseChanges = Partial<
  Pick<NewWarehouse, 'host' | 'port' | 'database' | 'user' | 'password' | 'tlsMode' | 'maxConnections'>
>;

// Serializes whatever decides the default warehouse: the bootstraps of control-plane processes
// starting at once, a warehouse added as the default, set-default (any 64-bit constant). Without
// it two new defaults at once would both clear the flag and one would fail on the unique index.
const DEFAULT_LOCK = 7_305_114_411_202_611;

export interface WarehouseRegistryOptions {
  engineFor?: EngineFor;
  tenantChanges?: TenantChangePublisher;
  logger?: Logger;
  /** Bounds each warehouse's size and probe questions (default 5 s). */
  askTimeoutMs?: number;
}

/** The warehouses: the operators' resource, and the sealed connection details behind each. */
export class WarehouseRegistry {
  constructor(
    private readonly dataSource: DataSource,
    private readonly sealer: PasswordSealer,
    private readonly options: WarehouseRegistryOptions = {},
  ) {}

  /**
   * At start: creates the default warehouse from WAREHOUSE_URL when there is no warehouse yet,
   * and places every account that has no placement on the default. Idempotent, and safe with
   * several processes starting at once (a transaction-level advisory lock).
   */
  async bootstrap(warehouseUrl: string): Promise<{ created: boolean; placed: number }> {
    const result = await this.dataSource.transaction(async (manager) => {
      await manager.query('SELECT pg_advisory_xact_lock($1)', [DEFAULT_LOCK]);
      const [{ count }] = (await manager.query(
        "SELECT count(*)::int AS count FROM warehouses WHERE owner = 'platform'",
      )) as [{ count: number }];
      let created = false;
      if (count === 0) {
        await this.insert(manager, {
          ...fieldsOf(warehouseConnectionFromUrl(warehouseUrl)),
          name: DEFAULT_WAREHOUSE_NAME,
          maxConnections: DEFAULT_MAX_CONNECTIONS,
          isDefault: true,
        });
        created = true;
      }
      const placed = (await manager.query(
        `INSERT INTO account_warehouses (account_id, warehouse_id, schema)
         SELECT a.id, w.id, 'account_' || replace(a.id::text, '-', '')
           FROM accounts a CROSS JOIN warehouses w
          WHERE w.is_default
            AND NOT EXISTS (SELECT 1 FROM account_warehouses p WHERE p.account_id = a.id)
         ON CONFLICT (account_id) DO NOTHING
         RETURNING account_id`,
      )) as { account_id: string }[];
      return { created, placed: placed.map((row) => row.account_id) };
    });
    for (const accountId of result.placed)
      await this.options.tenantChanges?.publish({ kind: 'tenant_changed', accountId });
    if (result.created || result.placed.length > 0)
      this.options.logger?.info('warehouses bootstrapped', {
        defaultCreated: result.created,
        accountsPlaced: result.placed.length,
      });
    if (!result.created) await this.followUrl(warehouseUrl);
    return { created: result.created, placed: result.placed.length };
  }

  /**
   * The default warehouse is WAREHOUSE_URL's at every start. Its password is sealed again from
   * the variable when the stored seal does not open (the credential keys were made anew: a
   * wiped .cache/dev-secrets.env, a second clone on the same database) or holds another
   * password, so the first event of a restarted stack lands instead of every resolve failing.
   * A different server (engine, host, port, database, user) moves nothing: the accounts' tables
   * are on the registered one, and moving them is a move; the operator hears it (never the
   * password). Returns what it did, for the tests.
   */
  async followUrl(warehouseUrl: string): Promise<'unchanged' | 'resealed' | 'differs'> {
    const repository = this.dataSource.getRepository(WarehouseEntity);
    const stored = await repository.findOneBy({ name: DEFAULT_WAREHOUSE_NAME, owner: 'platform' });
    if (!stored) return 'unchanged';
    const fields = fieldsOf(warehouseConnectionFromUrl(warehouseUrl));
    const moved = (['engine', 'host', 'port', 'database', 'user'] as const).filter(
      (field) => fields[field] !== stored[field],
    );
    if (moved.length > 0) {
      this.options.logger?.warn(
        'WAREHOUSE_URL differs from the registered warehouse "default"; the registry is used: change it with `warehouses update default`',
        { differs: moved },
      );
      return 'differs';
    }
    let why: 'unreadable' | 'password_differs' | undefined;
    try {
      if (this.connectionOf(stored).password !== fields.password) why = 'password_differs';
    } catch (error) {
      if (!isCredentialsUnreadable(error)) throw error;
      why = 'unreadable';
    }
    if (!why) return 'unchanged';
    const sealed = this.sealer.seal({ password: fields.password }, associatedDataOf(stored.id));
    await repository.update(
      { id: stored.id },
      {
        passwordCiphertext: sealed.ciphertext,
        passwordKeyId: sealed.keyId,
        ...(isUnreadableDetail(stored.statusDetail)
          ? { status: 'active' as const, statusDetail: null, statusChangedAt: new Date() }
          : {}),
      },
    );
    this.options.logger?.warn(
      why === 'unreadable'
        ? `the password of warehouse "default" was sealed with key ${stored.passwordKeyId}, which CREDENTIALS_ENCRYPTION_KEYS cannot open: sealed again from WAREHOUSE_URL with key ${sealed.keyId}`
        : 'WAREHOUSE_URL holds another password for warehouse "default": sealed again from WAREHOUSE_URL',
      { warehouseId: stored.id },
    );
    await this.publishChanged(await this.placedOn(this.dataSource.manager, stored.id));
    return 'resealed';
  }

  /**
   * At start, after the bootstrap: a warehouse whose password this process's keys cannot open
   * is `misconfigured`, its detail naming the key (what the operator API and the tenant's
   * console show), and the consumers' resolves of it answer 503 `credentials_unreadable`; one
   * that opens again after such a report (the key restored) is `active` again. Returns the
   * unreadable ones, which the start logs once.
   */
  async auditSeals(): Promise<{ warehouse: string; keyId: string; reason: UnreadableReason }[]> {
    const repository = this.dataSource.getRepository(WarehouseEntity);
    const unreadable: { warehouse: string; keyId: string; reason: UnreadableReason }[] = [];
    for (const warehouse of await repository.find({ order: { createdAt: 'ASC' } })) {
      try {
        this.connectionOf(warehouse);
      } catch (error) {
        if (!isCredentialsUnreadable(error)) throw error;
        const reason = error.details?.reason as UnreadableReason;
        unreadable.push({ warehouse: warehouse.name, keyId: warehouse.passwordKeyId, reason });
        await this.reportStatus(
          warehouse.id,
          'misconfigured',
          unreadableDetail(warehouse.passwordKeyId, reason),
        );
        continue;
      }
      if (warehouse.status === 'misconfigured' && isUnreadableDetail(warehouse.statusDetail))
        await this.reportStatus(warehouse.id, 'active');
    }
    return unreadable;
  }

  /**
   * Adds a platform warehouse of its engine (PostgreSQL unless told); `isDefault` makes it the
   * one new accounts are placed on. Without a port, the engine's own (defaultPortOf).
   */
  async add(given: Omit<NewWarehouse, 'port'> & { port?: number }): Promise<WarehouseView> {
    const input: NewWarehouse = { ...given, port: given.port ?? defaultPortOf(given.engine, given.tlsMode) };
    const problems = fieldProblems(input);
    if (problems.length > 0) throw badRequest('validation_failed', 'The request is not valid', problems);
    try {
      const entity = await this.dataSource.transaction(async (manager) => {
        if (input.isDefault) {
          await manager.query('SELECT pg_advisory_xact_lock($1)', [DEFAULT_LOCK]);
          await manager.query('UPDATE warehouses SET is_default = false WHERE is_default');
        }
        return this.insert(manager, input);
      });
      return viewOf(entity);
    } catch (error) {
      if (isUniqueViolation(error, 'warehouses_name_key'))
        throw conflict('warehouse_name_taken', `A warehouse named ${input.name} exists`);
      throw error;
    }
  }

  /**
   * Changes a warehouse's connection (a moved host, a rotated password). Every account placed on
   * it is broadcast as changed, so the consumers' caches resolve the new connection at once.
   * A change of host, port or TLS mode needs the password in the same request (422
   * `secret_required_for_new_host`): the stored one is sent only to the server it was entered
   * for, never to a new one that a leaked operator token named.
   */
  async update(idOrName: string, changes: WarehouseChanges): Promise<WarehouseView> {
    const warehouse = await this.find(idOrName);
    // The app is where the customer keeps it: an operator's edit here would be undone, or
    // would send the customer's password to a host the customer never named.
    if (warehouse.owner === 'customer')
      throw conflict(
        'warehouse_owned_by_app',
        `Warehouse ${warehouse.name} is the account's postgres_warehouse app ${warehouse.appId}: it changes with the app`,
      );
    const current = this.connectionOf(warehouse);
    const merged: NewWarehouse = {
      name: warehouse.name,
      // The engine never changes: the tables on the server are that engine's.
      engine: warehouse.engine,
      host: changes.host ?? current.host,
      port: changes.port ?? current.port,
      database: changes.database ?? current.database,
      user: changes.user ?? current.user,
      password: changes.password ?? current.password,
      tlsMode: changes.tlsMode ?? current.tlsMode,
      maxConnections: changes.maxConnections ?? current.maxConnections,
    };
    const problems = fieldProblems(merged);
    if (problems.length > 0) throw badRequest('validation_failed', 'The request is not valid', problems);
    const moved = (['host', 'port', 'tlsMode'] as const).filter((field) => merged[field] !== current[field]);
    if (moved.length > 0 && changes.password === undefined) throw passwordRequiredForNewServer(moved);
    const sealed =
      changes.password === undefined
        ? { ciphertext: warehouse.passwordCiphertext, keyId: warehouse.passwordKeyId }
        : this.sealer.seal({ password: changes.password }, associatedDataOf(warehouse.id));
    await this.dataSource.getRepository(WarehouseEntity).update(
      { id: warehouse.id },
      {
        host: merged.host,
        port: merged.port,
        database: merged.database,
        user: merged.user,
        passwordCiphertext: sealed.ciphertext,
        passwordKeyId: sealed.keyId,
        tlsMode: merged.tlsMode as WarehouseTlsMode,
        maxConnections: merged.maxConnections,
      },
    );
    const placed = await this.dataSource
      .getRepository(AccountWarehouseEntity)
      .find({ where: { warehouseId: warehouse.id }, select: { accountId: true } });
    for (const { accountId } of placed)
      await this.options.tenantChanges?.publish({ kind: 'tenant_changed', accountId });
    return viewOf(await this.find(warehouse.id));
  }

  async list(): Promise<WarehouseSummary[]> {
    const warehouses = await this.dataSource
      .getRepository(WarehouseEntity)
      .find({ order: { createdAt: 'ASC', name: 'ASC' } });
    const placements = await this.dataSource.getRepository(AccountWarehouseEntity).find();
    return Promise.all(
      warehouses.map(async (warehouse) => {
        const placed = placements.filter((p) => p.warehouseId === warehouse.id);
        return {
          ...viewOf(warehouse),
          accounts: placed.length,
          sizeBytes: await this.sizeOf(warehouse, placed),
        };
      }),
    );
  }

  async get(idOrName: string): Promise<WarehouseSummary> {
    const warehouse = await this.find(idOrName);
    const placed = await this.dataSource
      .getRepository(AccountWarehouseEntity)
      .findBy({ warehouseId: warehouse.id });
    return { ...viewOf(warehouse), accounts: placed.length, sizeBytes: await this.sizeOf(warehouse, placed) };
  }

  /** Makes a platform warehouse the default; accounts created from now on are placed there. */
  async setDefault(idOrName: string): Promise<WarehouseView> {
    const warehouse = await this.find(idOrName);
    if (warehouse.owner !== 'platform')
      throw conflict('warehouse_not_platform', "A customer's warehouse cannot be the default");
    await this.dataSource.transaction(async (manager) => {
      await manager.query('SELECT pg_advisory_xact_lock($1)', [DEFAULT_LOCK]);
      await manager.query('UPDATE warehouses SET is_default = false WHERE is_default AND id <> $1', [
        warehouse.id,
      ]);
      const updated = (await manager.query(
        'UPDATE warehouses SET is_default = true, updated_at = now() WHERE id = $1',
        [warehouse.id],
      )) as [unknown[], number];
      // Deleted since it was found: the old default keeps its flag (the transaction rolls back).
      if (updated[1] === 0) throw warehouseNotFound(idOrName);
    });
    return viewOf(await this.find(warehouse.id));
  }

  /**
   * Deletes a platform warehouse's entry, never a server's data: 404 warehouse_not_found, 409
   * warehouse_is_default, warehouse_owned_by_app (a customer's goes with its app),
   * warehouse_in_use (an account is placed on it, or a move copies one onto it) and
   * warehouse_in_move (an active move's source or target). A finished move's record keeps its
   * other side; this one becomes null there.
   */
  async remove(idOrName: string): Promise<void> {
    const found = await this.find(idOrName);
    if (found.owner === 'customer')
      throw conflict(
        'warehouse_owned_by_app',
        `Warehouse ${found.name} is the account's warehouse app ${found.appId}: it goes when the app is deleted`,
      );
    try {
      await this.dataSource.transaction(async (manager) => {
        // set-default of this warehouse waits, and fails once it is gone; a placement (FOR SHARE)
        // or a move's insert (its foreign key) waits too, and is refused after.
        await manager.query('SELECT pg_advisory_xact_lock($1)', [DEFAULT_LOCK]);
        const [row] = (await manager.query('SELECT is_default FROM warehouses WHERE id = $1 FOR UPDATE', [
          found.id,
        ])) as { is_default: boolean }[];
        if (!row) throw warehouseNotFound(idOrName);
        if (row.is_default)
          throw conflict(
            'warehouse_is_default',
            `Warehouse ${found.name} is the default: make another one the default first`,
          );
        const placed = await this.placedOn(manager, found.id);
        if (placed.length > 0) throw warehouseInUse(found.name, placed.length);
        const move = await this.activeMoveOf(manager, found.id);
        if (move) throw warehouseInMove(found.name, move);
        await manager.query('DELETE FROM warehouses WHERE id = $1', [found.id]);
      });
    } catch (error) {
      const driver = (error as { driverError?: { code?: string; constraint?: string } }).driverError;
      // Raced past the checks: a placement's foreign key, or an active move's sides.
      if (driver?.code === FOREIGN_KEY_VIOLATION) throw warehouseInUse(found.name);
      if (driver?.code === CHECK_VIOLATION && driver.constraint === 'warehouse_moves_active_sides')
        throw warehouseInMove(found.name);
      throw error;
    }
    this.options.logger?.info('warehouse deleted', {
      warehouseId: found.id,
      name: found.name,
      engine: found.engine,
    });
  }

  /** The accounts placed on a warehouse, oldest placement first. */
  async accountsOf(idOrName: string): Promise<PlacedAccount[]> {
    const warehouse = await this.find(idOrName);
    const rows = (await this.dataSource.query(
      `SELECT p.account_id, a.name, p.schema, p.epoch, p.placed_at
         FROM account_warehouses p JOIN accounts a ON a.id = p.account_id
        WHERE p.warehouse_id = $1 ORDER BY p.placed_at, p.account_id`,
      [warehouse.id],
    )) as { account_id: string; name: string; schema: string; epoch: number; placed_at: Date }[];
    return rows.map((row) => ({
      accountId: row.account_id,
      accountName: row.name,
      schema: row.schema,
      epoch: row.epoch,
      placedAt: row.placed_at.toISOString(),
    }));
  }

  /**
   * What a consumer met at a warehouse. Only a change of status moves status_changed_at, so
   * repeated reports of the same state keep the time it began.
   */
  async reportStatus(warehouseId: string, status: WarehouseStatus, detail?: string): Promise<void> {
    if (!(warehouseStatuses as readonly string[]).includes(status))
      throw invalidField('body.status', `one of ${warehouseStatuses.join(', ')}`);
    if (detail !== undefined && detail.length > MAX_STATUS_DETAIL_LENGTH)
      throw invalidField('body.detail', `at most ${MAX_STATUS_DETAIL_LENGTH} characters`);
    if (!isUuid(warehouseId)) throw warehouseNotFound(warehouseId);
    // PostgreSQL text holds no NUL; a consumer's error text may: dropped rather than lose the report.
    const stored = detail === undefined ? null : detail.replace(/\0/g, '');
    const updated = (await this.dataSource.query(
      `UPDATE warehouses
          SET status_changed_at = CASE WHEN status = $2 THEN status_changed_at ELSE now() END,
              status = $2, status_detail = $3
        WHERE id = $1 RETURNING id`,
      [warehouseId.toLowerCase(), status, stored],
    )) as [unknown[], number];
    if (updated[1] === 0) throw warehouseNotFound(warehouseId);
  }

  /**
   * Probes the warehouse now and records what it met: the operator's check after fixing a
   * warehouse, without waiting for the consumers' next report.
   */
  async check(idOrName: string): Promise<WarehouseView> {
    const warehouse = await this.find(idOrName);
    const engineFor = this.options.engineFor;
    if (!engineFor)
      throw new AppError(503, 'warehouse_engine_unavailable', 'This process cannot open warehouses');
    const engine = engineFor(this.connectionOf(warehouse));
    let status: WarehouseStatus = 'active';
    let detail: string | undefined;
    try {
      await this.bounded(engine.probe(), 'probe');
    } catch (error) {
      const kind = engine.classifyError(error);
      status = kind === 'misconfigured' ? 'misconfigured' : 'unavailable';
      // The driver's message names the host, database or user at most, never the password.
      const message = (error as { message?: unknown } | null)?.message;
      detail = `probe failed (${kind}): ${typeof message === 'string' ? message : String(error)}`.slice(
        0,
        MAX_STATUS_DETAIL_LENGTH,
      );
      this.options.logger?.warn('warehouse probe failed', { warehouseId: warehouse.id, error: detail });
    }
    await this.reportStatus(warehouse.id, status, detail);
    return viewOf(await this.find(warehouse.id));
  }

  /**
   * Creates or updates the warehouse a customer's postgres_warehouse app is, in the caller's
   * transaction (the app's own save): one row per app, owner 'customer', the app's account and
   * schema, the password sealed under the row's id. Returns the accounts placed on it when the
   * connection changed, for `publishChanged` once the transaction committed. A new schema is
   * refused (409 warehouse_app_in_use) while an account is placed: its tables are in the old
   * one, and moving them is a move, not an edit.
   */
  async saveCustomer(manager: EntityManager, app: CustomerWarehouseApp): Promise<string[]> {
    const problems = fieldProblems({ ...app, name: customerWarehouseName(app.appId) });
    // Reached only where the registry is stricter than the app type (names counted in bytes):
    // answered as the app's own settings, at the app's field.
    if (problems.length > 0)
      throw unprocessable(
        'invalid_app_settings',
        'The app cannot be a warehouse',
        problems.map(({ path, message }) => ({
          path:
            path === 'body.password' ? 'body.credentials.password' : path.replace(/^body\./, 'body.config.'),
          message,
        })),
      );
    const repository = manager.getRepository(WarehouseEntity);
    const existing = await repository
      .createQueryBuilder('w')
      .setLock('pessimistic_write')
      .where('w.app_id = :appId', { appId: app.appId })
      .getOne();
    if (!existing) {
      await this.insert(manager, {
        ...app,
        name: customerWarehouseName(app.appId),
        maxConnections: CUSTOMER_MAX_CONNECTIONS,
        customer: { appId: app.appId, accountId: app.accountId, schema: app.schema, engine: app.engine },
      });
      return [];
    }
    const placed = await this.placedOn(manager, existing.id);
    if (existing.schema !== app.schema && placed.length > 0)
      throw warehouseAppInUse(app.appId, 'its schema cannot change while the account is placed on it');
    const current = this.connectionOf(existing);
    const changed =
      (['host', 'port', 'database', 'user', 'password', 'tlsMode'] as const).some(
        (field) => current[field] !== app[field],
      ) || existing.schema !== app.schema;
    if (!changed) return [];
    const sealed = this.sealer.seal({ password: app.password }, associatedDataOf(existing.id));
    await repository.update(
      { id: existing.id },
      {
        host: app.host,
        port: app.port,
        database: app.database,
        user: app.user,
        passwordCiphertext: sealed.ciphertext,
        passwordKeyId: sealed.keyId,
        tlsMode: app.tlsMode as WarehouseTlsMode,
        schema: app.schema,
      },
    );
    return placed;
  }

  /**
   * Removes the warehouse of an app that is deleted or loses its password, in the caller's
   * transaction; 409 warehouse_app_in_use while an account is placed on it or an active move
   * names it (the placement's foreign key and the moves' check refuse it too, so one made
   * meanwhile cannot be orphaned). A finished move's record keeps the other side.
   */
  async removeCustomer(manager: EntityManager, appId: string): Promise<void> {
    const existing = await manager
      .getRepository(WarehouseEntity)
      .createQueryBuilder('w')
      .setLock('pessimistic_write')
      .where('w.app_id = :appId', { appId })
      .getOne();
    if (!existing) return;
    if ((await this.placedOn(manager, existing.id)).length > 0)
      throw warehouseAppInUse(appId, 'the account is placed on it; move the account off it first');
    if (await this.activeMoveOf(manager, existing.id))
      throw warehouseAppInUse(appId, 'an active move names it; wait for the move to end');
    try {
      await manager.query('DELETE FROM warehouses WHERE id = $1', [existing.id]);
    } catch (error) {
      // A placement or an active move made meanwhile names it (a finished move's side goes null).
      const driver = (error as { driverError?: { code?: string; constraint?: string } }).driverError;
      if (
        driver?.code === FOREIGN_KEY_VIOLATION ||
        (driver?.code === CHECK_VIOLATION && driver.constraint === 'warehouse_moves_active_sides')
      )
        throw warehouseAppInUse(appId, 'a placement or an active move still names it');
      throw error;
    }
  }

  /** Tells the consumers' caches that these accounts' connection changed. */
  async publishChanged(accountIds: readonly string[]): Promise<void> {
    for (const accountId of accountIds)
      await this.options.tenantChanges?.publish({ kind: 'tenant_changed', accountId });
  }

  /** The warehouse a customer's app is, or null while it has none (a draft, a deleted app). */
  async ofApp(appId: string): Promise<WarehouseEntity | null> {
    if (!isUuid(appId)) return null;
    return this.dataSource.getRepository(WarehouseEntity).findOneBy({ appId: appId.toLowerCase() });
  }

  /** The id of a move that is not done or failed with the warehouse on either side. */
  private async activeMoveOf(manager: EntityManager, warehouseId: string): Promise<string | undefined> {
    const [move] = (await manager.query(
      `SELECT id FROM warehouse_moves
        WHERE (from_warehouse_id = $1 OR to_warehouse_id = $1) AND stage NOT IN ('done', 'failed')
        LIMIT 1`,
      [warehouseId],
    )) as { id: string }[];
    return move?.id;
  }

  private async placedOn(manager: EntityManager, warehouseId: string): Promise<string[]> {
    const rows = (await manager.query(
      // An account a move is copying onto it counts: its writers fill it already.
      `SELECT account_id FROM account_warehouses
        WHERE warehouse_id = $1 OR move_to_warehouse_id = $1 ORDER BY account_id`,
      [warehouseId],
    )) as { account_id: string }[];
    return rows.map((row) => row.account_id);
  }

  /** The warehouse's connection with its password opened: only for processes that connect. */
  connectionOf(warehouse: WarehouseEntity): WarehouseConnection {
    const opened = this.sealer.open(
      { ciphertext: warehouse.passwordCiphertext, keyId: warehouse.passwordKeyId },
      associatedDataOf(warehouse.id),
    );
    return {
      warehouseId: warehouse.id,
      engine: warehouse.engine,
      host: warehouse.host,
      port: warehouse.port,
      database: warehouse.database,
      user: warehouse.user,
      password: typeof opened.password === 'string' ? opened.password : '',
      tlsMode: warehouse.tlsMode,
      owner: warehouse.owner,
      maxConnections: warehouse.maxConnections,
    };
  }

  /** By id or by name; 404 warehouse_not_found otherwise. */
  async find(idOrName: string): Promise<WarehouseEntity> {
    const repository = this.dataSource.getRepository(WarehouseEntity);
    const found = isUuid(idOrName)
      ? await repository.findOneBy({ id: idOrName.toLowerCase() })
      : await repository.findOneBy({ name: idOrName });
    if (!found) throw warehouseNotFound(idOrName);
    return found;
  }

  private async insert(
    manager: EntityManager,
    input: NewWarehouse & {
      customer?: { appId: string; accountId: string; schema: string; engine: WarehouseEngineName };
    },
  ): Promise<WarehouseEntity> {
    const id = randomUUID();
    const sealed = this.sealer.seal({ password: input.password }, associatedDataOf(id));
    const repository = manager.getRepository(WarehouseEntity);
    const now = new Date();
    return repository.save(
      repository.create({
        id,
        name: input.name,
        // A customer's warehouse has its app type's engine; a platform one the operator's.
        engine: input.customer?.engine ?? ((input.engine ?? 'postgres') as WarehouseEngineName),
        owner: input.customer ? 'customer' : 'platform',
        accountId: input.customer?.accountId ?? null,
        appId: input.customer?.appId ?? null,
        schema: input.customer?.schema ?? null,
        host: input.host,
        port: input.port,
        database: input.database,
        user: input.user,
        passwordCiphertext: sealed.ciphertext,
        passwordKeyId: sealed.keyId,
        tlsMode: input.tlsMode as WarehouseTlsMode,
        maxConnections: input.maxConnections ?? DEFAULT_MAX_CONNECTIONS,
        isDefault: input.customer ? false : (input.isDefault ?? false),
        status: 'active',
        statusDetail: null,
        statusChangedAt: now,
      }),
    );
  }

  /** The placed accounts' storage summed by the engine; null (logged) when it cannot be asked. */
  private async sizeOf(warehouse: WarehouseEntity, placed: AccountWarehouseEntity[]): Promise<number | null> {
    const engineFor = this.options.engineFor;
    if (!engineFor) return null;
    if (placed.length === 0) return 0;
    try {
      const engine = engineFor(this.connectionOf(warehouse));
      const sizes = await this.bounded(
        Promise.all(placed.map((p) => engine.storageBytes({ accountId: p.accountId, schema: p.schema }))),
        'size',
      );
      return sizes.reduce((sum, size) => sum + size, 0);
    } catch (error) {
      this.options.logger?.warn('warehouse size not read', {
        warehouseId: warehouse.id,
        error: error instanceof Error ? error.message : String(error),
      });
      return null;
    }
  }

  private async bounded<T>(work: Promise<T>, what: string): Promise<T> {
    const timeoutMs = this.options.askTimeoutMs ?? 5000;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`warehouse ${what}: no answer within ${timeoutMs} ms`)),
        timeoutMs,
      );
    });
    work.catch(() => undefined);
    try {
      return await Promise.race([work, late]);
    } finally {
      clearTimeout(timer);
    }
  }
}
