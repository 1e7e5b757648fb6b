import {
  appTypeDefinition,
  appTypes,
  connectorFor,
  rolesOfAppType,
  warehouseAppTypes,
} from '@pipeline/catalog';
import { ConnectorError, type ConnectorOptions } from '@pipeline/connectors';
import { isAppError } from '@pipeline/errors';
import type { TenantChangePublisher } from '@pipeline/tenancy';
import { randomUUID } from 'node:crypto';
import type { DataSource, EntityManager } from 'typeorm';
import {
  conflict,
  invalidField,
  isCredentialsUnreadable,
  unprocessable,
  type UnreadableReason,
} from '../http/api-errors';
import { findInAccount, softDelete } from '../database/account-resource';
import { isUuid } from '../http/ids';
import { iso, isoOrNull, pageOf, whereState } from '../http/list-query';
import type { ListResponse, PageRequest, SortOrder } from '../http/pagination';
import type { ResourceState } from '../http/resource-state';
import type { AppDetail, AppListItem, CreateAppBody, UpdateAppBody } from './app.dto';
import { AppEntity, type AppRole } from './app.entity';
import { AppSettingsValidator } from './app-settings';
import type { CredentialCipher } from './credential-cipher';
import { keepMaskedSecrets, maskAll, maskSecretFields } from './secret-masking';
import { enteredAgain, recipientOrigin, secretRequiredForNewHost, TenantUrlPolicy } from './tenant-urls';
import type { WarehouseRegistry } from '../warehouse-registry/warehouse-registry';
import {
  isWarehouseAppType,
  WarehouseAppCheck,
  warehouseAppTarget,
  warehouseEngineOf,
  type AppConnectionTest,
} from './warehouse-app-check';
import type { ConnectionAttemptLimit } from './connection-attempts';

export type AppSort = 'created_at' | 'updated_at' | 'display_name';

export interface AppListQuery {
  state?: ResourceState;
  role?: AppRole;
  appType?: string;
  sort?: AppSort;
  order?: SortOrder;
}

const sortProperty: Record<AppSort, keyof AppEntity> = {
  created_at: 'createdAt',
  updated_at: 'updatedAt',
  display_name: 'displayName',
};

const UNIQUE_VIOLATION = '23505';

/** How long a connection test of a source app waits for its vendor. */
const CONNECTION_TEST_TIMEOUT_MS = 20_000;

/**
 * What still uses an app and forbids its deletion ("active source <ids>"), or undefined. The
 * features that use apps register one (apps/ imports none of them).
 */
export type AppUsers = (accountId: string, appId: string) => Promise<string | undefined>;

export class AppService {
  private readonly users: AppUsers[] = [];

  constructor(
    private readonly dataSource: DataSource,
    private readonly cipher: CredentialCipher,
    private readonly urls: TenantUrlPolicy = new TenantUrlPolicy(),
    private readonly changes?: TenantChangePublisher,
    private readonly settings = new AppSettingsValidator(),
    private readonly warehouses = new WarehouseAppCheck(),
    private readonly registry?: WarehouseRegistry,
    /** How a source app's connector reaches its vendor (VENDOR_BASE_URL_*, EGRESS_ALLOW_PRIVATE_RANGES). */
    private readonly connectors: ConnectorOptions = {},
    /** Bounds the connections an account's requests open (APP_CONNECTION_TESTS_PER_MINUTE); absent: none. */
    private readonly connectionAttempts?: ConnectionAttemptLimit,
  ) {}

  private get repository() {
    return this.dataSource.getRepository(AppEntity);
  }

  /** Adds a check that refuses an app's deletion while something uses it. */
  registerUsers(users: AppUsers): void {
    this.users.push(users);
  }

  async list(accountId: string, query: AppListQuery, page: PageRequest): Promise<ListResponse<AppListItem>> {
    const qb = this.repository.createQueryBuilder('app').where('app.accountId = :accountId', { accountId });
    whereState(qb, query.state);
    if (query.role) qb.andWhere(':role = ANY(app.role)', { role: query.role });
    if (query.appType) qb.andWhere('app.appType = :appType', { appType: query.appType });
    return pageOf(qb, sortProperty[query.sort ?? 'created_at'], query.order, page, toListItem);
  }

  async get(accountId: string, appId: string): Promise<AppDetail> {
    return this.toDetail(await this.find(accountId, appId));
  }

  /** The app, scoped to the account; another account's app is as unknown as a missing one. */
  find(accountId: string, appId: string): Promise<AppEntity> {
    return findInAccount(this.repository, 'app', accountId, appId);
  }

  /**
   * An app a source or integration may reference: of this account, not deleted, with `role`.
   * `field` names the body field in the 422 answer.
   */
  async requireUsable(accountId: string, appId: string, role: AppRole, field: string): Promise<AppEntity> {
    const app = isUuid(appId) ? await this.repository.findOneBy({ id: appId, accountId }) : null;
    if (!app || app.state === 'deleted') {
      throw unprocessable('invalid_reference', `${field} does not name an app of this account`, [
        { path: `body.${field}`, message: 'no such app' },
      ]);
    }
    if (!app.role.includes(role)) {
      throw unprocessable('app_role_mismatch', `App ${app.id} does not have the ${role} role`, [
        { path: `body.${field}`, message: `must be a ${role}-role app` },
      ]);
    }
    return app;
  }

  async create(accountId: string, body: CreateAppBody): Promise<AppDetail> {
    const definition = appTypeDefinition(body.appType);
    if (!definition) {
      throw unprocessable(
        'unknown_app_type',
        `Unknown appType ${body.appType}; known: ${appTypes.join(', ')}`,
        [{ path: 'body.appType', message: 'unknown app type' }],
      );
    }
    const role = this.checkRoles(body.appType, body.role ?? rolesOfAppType(body.appType));
    const config = body.config ?? {};
    this.checkNotEmpty(body.appType, body.credentials ?? null);
    // A draft (no credentials, inactive) may leave required config for later; an app that
    // becomes active must be complete.
    this.settings.check(body.appType, {
      credentials: body.credentials ?? null,
      ...(body.config !== undefined || body.credentials ? { config } : {}),
    });
    await this.checkUrls(body.appType, config);
    const id = randomUUID();
    // A customer's warehouse is saved only once it answers: connected through the egress
    // guard, logged in, allowed to create in its schema. A draft without a password waits.
    if (isWarehouseAppType(body.appType) && body.credentials && Object.keys(body.credentials).length > 0) {
      await this.connectionAttempts?.take(accountId);
      await this.warehouses.assertWorks(
        warehouseAppTarget({ id, appType: body.appType, config }, body.credentials),
        'body.config',
      );
    }
    const app = this.repository.create({
      id,
      accountId,
      appType: body.appType,
      displayName: this.checkName(body.displayName),
      role,
      config,
      permissions: [],
      errorMessage: null,
      lastSyncAt: null,
      consecutiveFailureCount: 0,
      deletedAt: null,
      ...this.sealed(id, body.appType, body.credentials ?? null),
    });
    await this.saveUnique(app, (manager) => this.syncWarehouse(manager, app, body.credentials ?? null));
    return this.toDetail(app);
  }

  async update(accountId: string, appId: string, body: UpdateAppBody): Promise<AppDetail> {
    const app = await this.find(accountId, appId);
    if (app.state === 'deleted') throw conflict('resource_deleted', `App ${app.id} is deleted`);
    if (body.displayName !== undefined) app.displayName = this.checkName(body.displayName);
    if (body.role !== undefined) app.role = this.checkRoles(app.appType, body.role);
    const config =
      body.config !== undefined
        ? (keepMaskedSecrets(body.config, app.config) as Record<string, unknown>)
        : undefined;
    if (body.credentials !== undefined) this.checkNotEmpty(app.appType, body.credentials);
    // Only what the request changes is checked: an app saved before validation keeps working
    // until its owner edits the part that does not fit.
    this.settings.check(app.appType, {
      ...(config !== undefined || body.credentials ? { config: config ?? app.config } : {}),
      ...(body.credentials !== undefined ? { credentials: body.credentials } : {}),
    });
    if (config !== undefined) {
      await this.checkUrls(app.appType, config);
      // A stored secret goes only to the host it was entered for: a new host needs it again
      // (or none: credentials null deactivates the app and drops them).
      const moved = recipientOrigin(app.appType, config) !== recipientOrigin(app.appType, app.config);
      if (moved && app.credentialsCiphertext && body.credentials !== null && !enteredAgain(body.credentials))
        throw secretRequiredForNewHost('body.config', 'The new config');
      app.config = config;
    }
    if (body.credentials !== undefined)
      Object.assign(app, this.sealed(app.id, app.appType, body.credentials));
    // A warehouse whose connection or password changed must answer again before it is saved.
    const credentials = body.credentials === undefined ? this.openCredentials(app) : body.credentials;
    if (isWarehouseAppType(app.appType) && (config !== undefined || body.credentials) && credentials) {
      await this.connectionAttempts?.take(accountId);
      await this.warehouses.assertWorks(warehouseAppTarget(app, credentials), 'body.config');
    }
    const placed = await this.saveUnique(app, (manager) => this.syncWarehouse(manager, app, credentials));
    // Rotated credentials or a new config: the forwarding consumers must not keep the old ones.
    await this.changes?.publish({ kind: 'tenant_changed', accountId });
    await this.registry?.publishChanged(placed.filter((id) => id !== accountId));
    return this.toDetail(app);
  }

  /** Soft delete; refused while an active source imports through the app. Idempotent. */
  async delete(accountId: string, appId: string): Promise<AppDetail> {
    const app = await this.find(accountId, appId);
    if (app.state === 'deleted') return this.toDetail(app);
    for (const users of this.users) {
      const user = await users(accountId, app.id);
      if (user) throw conflict('app_in_use', `App ${app.id} is used by ${user}; pause or delete it first`);
    }
    // The warehouse row goes with the app, or neither does (409 warehouse_app_in_use while the
    // account is placed on it).
    const deleted = this.toDetail(
      await this.dataSource.transaction(async (manager) => {
        if (this.registry && isWarehouseAppType(app.appType))
          await this.registry.removeCustomer(manager, app.id);
        return softDelete(manager.getRepository(AppEntity), app);
      }),
    );
    await this.changes?.publish({ kind: 'tenant_changed', accountId });
    return deleted;
  }

  /**
   * Tests the connection of an app that supports it: a customer's warehouse (connects and checks
   * it may create tables) or an app that imports (its connector's check: one authenticated
   * read at the vendor). 200 when it works, 422 with the failure's code otherwise, at the
   * credential fields when the vendor refused them. The app is not changed.
   */
  async testConnection(accountId: string, appId: string): Promise<AppConnectionTest> {
    const app = await this.find(accountId, appId);
    if (app.state === 'deleted') throw conflict('resource_deleted', `App ${app.id} is deleted`);
    const imports = appTypeDefinition(app.appType)?.imports !== undefined;
    if (!isWarehouseAppType(app.appType) && !imports)
      throw unprocessable(
        'connection_test_not_supported',
        `${app.appType} apps have no connection test; only customer-owned warehouses and sources that import do`,
      );
    const credentials = this.openCredentials(app);
    if (!credentials)
      throw unprocessable('credentials_required', `App ${app.id} has no credentials to connect with`, [
        { path: 'credentials', message: 'set the credentials first' },
      ]);
    await this.connectionAttempts?.take(accountId);
    if (isWarehouseAppType(app.appType))
      return this.warehouses.assertWorks(warehouseAppTarget(app, credentials), 'config');
    return this.checkConnector(app, credentials);
  }

  /** The connector's own check, with few retries: a person waits for the answer. */
  private async checkConnector(
    app: AppEntity,
    credentials: Record<string, unknown>,
  ): Promise<AppConnectionTest> {
    try {
      const connector = connectorFor(
        { appType: app.appType, credentials, config: app.config },
        { ...this.connectors, attempts: 2, minDelayMs: 200 },
      );
      await connector?.check(AbortSignal.timeout(CONNECTION_TEST_TIMEOUT_MS));
      return { ok: true, schemaCreated: false };
    } catch (error) {
      if (!(error instanceof ConnectorError)) throw error;
      if (error.code === 'invalid_credentials')
        throw unprocessable(
          'credentials_rejected',
          `The connection test failed: ${error.message}; the credentials were refused`,
          Object.keys(credentials).map((field) => ({
            path: `credentials.${field}`,
            message: `refused by the vendor (${error.message})`,
          })),
        );
      throw unprocessable(
        error.code === 'network_error' ? 'connection_failed' : 'connection_test_failed',
        `The connection test failed: ${error.message}`,
      );
    }
  }

  /** Decrypted credentials, for the internal write-key resolution only; never for API responses. */
  openCredentials(app: AppEntity): Record<string, unknown> | null {
    if (!app.credentialsCiphertext || !app.credentialsKeyId) return null;
    return this.cipher.open(
      { ciphertext: app.credentialsCiphertext, keyId: app.credentialsKeyId },
      `app:${app.id}`,
    );
  }

  /** Every URL of the config, and the host the config sends the credentials to, pass the egress policy. */
  private checkUrls(appType: string, config: Record<string, unknown>): Promise<void> {
    const recipient = recipientOrigin(appType, config);
    // A warehouse's recipient (postgres://host:port) is no http URL: its addresses are checked
    // when it connects, the connection test at save time included.
    const httpRecipient = recipient !== null && /^https?:\/\//.test(recipient);
    return this.urls.assertAllowed(config, 'body.config', httpRecipient ? [['body.config', recipient]] : []);
  }

  private checkNotEmpty(appType: string, credentials: Record<string, unknown> | null) {
    if (
      credentials !== null &&
      Object.keys(credentials).length === 0 &&
      this.settings.needsCredentials(appType)
    ) {
      throw invalidField('body.credentials', 'must have at least one field, or be omitted');
    }
  }

  private sealed(id: string, appType: string, credentials: Record<string, unknown> | null) {
    const needed = this.settings.needsCredentials(appType);
    if (credentials === null || Object.keys(credentials).length === 0) {
      // An app type with nothing to authenticate (web tracking) works without credentials.
      return {
        credentialsCiphertext: null,
        credentialsKeyId: null,
        state: needed ? ('inactive' as const) : ('active' as const),
      };
    }
    const { ciphertext, keyId } = this.cipher.seal(credentials, `app:${id}`);
    return { credentialsCiphertext: ciphertext, credentialsKeyId: keyId, state: 'active' as const };
  }

  private checkName(name: string): string {
    const trimmed = name.trim();
    if (trimmed.length === 0) throw invalidField('body.displayName', 'must not be blank');
    return trimmed;
  }

  private checkRoles(appType: string, roles: AppRole[]): AppRole[] {
    const supported = rolesOfAppType(appType);
    const unique = [...new Set(roles)];
    const unsupported = unique.filter((r) => !supported.includes(r));
    if (unsupported.length > 0) {
      throw unprocessable(
        'role_not_supported',
        `${appType} apps cannot have the role ${unsupported.join(', ')}`,
        [{ path: 'body.role', message: `supported: ${supported.join(', ')}` }],
      );
    }
    return unique;
  }

  /**
   * Keeps the registry's row of a customer's warehouse app in step with the app: present while
   * the app is live with a password, with the app's connection and schema. Returns the accounts
   * placed on it whose connection changed.
   */
  private async syncWarehouse(
    manager: EntityManager,
    app: AppEntity,
    credentials: Record<string, unknown> | null,
  ): Promise<string[]> {
    if (!this.registry || !isWarehouseAppType(app.appType)) return [];
    if (app.state !== 'active' || !credentials) {
      await this.registry.removeCustomer(manager, app.id);
      return [];
    }
    const { connection, schema } = warehouseAppTarget(app, credentials);
    return this.registry.saveCustomer(manager, {
      appId: app.id,
      accountId: app.accountId,
      engine: warehouseEngineOf(app.appType),
      host: connection.host,
      port: connection.port,
      database: connection.database,
      user: connection.user,
      password: connection.password,
      tlsMode: connection.tlsMode,
      schema,
    });
  }

  /**
   * Creates the warehouse rows of warehouse apps saved before the registry knew them
   * (at start, after the registry's bootstrap). Idempotent. An app the registry refuses (a
   * name PostgreSQL would cut) is left as it is and reported, never a failed start: it becomes
   * a warehouse when its owner corrects it.
   */
  async registerWarehouseApps(): Promise<{ registered: number; refused: { appId: string; code: string }[] }> {
    const registry = this.registry;
    const refused: { appId: string; code: string }[] = [];
    if (!registry) return { registered: 0, refused };
    const apps = await this.repository
      .createQueryBuilder('app')
      .where('app.appType IN (:...types)', { types: warehouseAppTypes })
      .andWhere("app.state = 'active'")
      .andWhere('app.credentialsCiphertext IS NOT NULL')
      .andWhere('NOT EXISTS (SELECT 1 FROM warehouses w WHERE w.app_id = app.id)')
      .getMany();
    for (const app of apps) {
      try {
        await this.dataSource.transaction((manager) =>
          this.syncWarehouse(manager, app, this.openCredentials(app)),
        );
      } catch (error) {
        if (!isAppError(error)) throw error;
        refused.push({ appId: app.id, code: error.code });
      }
    }
    return { registered: apps.length - refused.length, refused };
  }

  private async saveUnique(
    app: AppEntity,
    alongside: (manager: EntityManager) => Promise<string[]> = async () => [],
  ): Promise<string[]> {
    try {
      return await this.dataSource.transaction(async (manager) => {
        await manager.getRepository(AppEntity).save(app);
        return alongside(manager);
      });
    } catch (error) {
      // Only the name's index: the warehouse row saved alongside has unique keys of its own.
      const { code, constraint } = error as { code?: string; constraint?: string };
      if (code === UNIQUE_VIOLATION && constraint === 'apps_account_name_live') {
        throw conflict('app_name_taken', `An app named "${app.displayName}" already exists`);
      }
      throw error;
    }
  }

  /**
   * Every app whose stored credentials this process's keys cannot open (at start, for the log
   * that tells the operator once), read a page at a time.
   */
  async unreadableCredentials(): Promise<{ appId: string; keyId: string; reason: UnreadableReason }[]> {
    const found: { appId: string; keyId: string; reason: UnreadableReason }[] = [];
    const pageSize = 500;
    let after = '00000000-0000-0000-0000-000000000000';
    for (;;) {
      const page = await this.repository
        .createQueryBuilder('app')
        .select(['app.id', 'app.credentialsCiphertext', 'app.credentialsKeyId'])
        .where('app.credentialsCiphertext IS NOT NULL')
        .andWhere("app.state <> 'deleted'")
        .andWhere('app.id > :after', { after })
        .orderBy('app.id', 'ASC')
        .limit(pageSize)
        .getMany();
      for (const app of page) {
        try {
          this.openCredentials(app);
        } catch (error) {
          if (!isCredentialsUnreadable(error)) throw error;
          found.push({
            appId: app.id,
            keyId: app.credentialsKeyId ?? '',
            reason: error.details?.reason as UnreadableReason,
          });
        }
      }
      const last = page.at(-1);
      if (!last || page.length < pageSize) return found;
      after = last.id;
    }
  }

  private toDetail(app: AppEntity): AppDetail {
    const detail = {
      ...toListItem(app),
      permissions: app.permissions,
      config: maskSecretFields(app.config) as Record<string, unknown>,
      consecutiveFailureCount: app.consecutiveFailureCount,
    };
    let credentials: Record<string, unknown> | null;
    try {
      credentials = this.openCredentials(app);
    } catch (error) {
      // The app is still shown, with why its credentials cannot be used and what fixes it.
      if (!isCredentialsUnreadable(error)) throw error;
      return {
        ...detail,
        credentials: null,
        credentialsError: { code: 'credentials_unreadable', message: error.message },
      };
    }
    return { ...detail, credentials: credentials ? maskAll(credentials) : null };
  }
}

export function toListItem(app: AppEntity): AppListItem {
  return {
    id: app.id,
    accountId: app.accountId,
    appType: app.appType,
    displayName: app.displayName,
    role: app.role,
    state: app.state,
    errorMessage: app.errorMessage,
    lastSyncAt: isoOrNull(app.lastSyncAt),
    createdAt: iso(app.createdAt),
    updatedAt: iso(app.updatedAt),
  };
}
