import { appTypeDefinition, forwardingAppTypes } from '@pipeline/catalog';
import type { TenantChangePublisher } from '@pipeline/tenancy';
import { randomBytes } from 'node:crypto';
import { PassThrough } from 'node:stream';
import type { Express } from 'express';
import request from 'supertest';
import { createLogger } from '@pipeline/logger';
import type { AccountLimits } from '../accounts/account-limits';
import { AccountService } from '../accounts/account.service';
import { composeApi, type AppDependencies, type ControlPlaneServices } from '../composition';
import { ControlPlaneMetrics } from '../metrics/control-plane-metrics';
import { ApiKeyService } from '../auth/api-key.service';
import { InternalTokens } from '../auth/internal-tokens';
import { scopes as allScopes, type Scope } from '../auth/scopes';
import type { AccountWarehouses } from '../warehouse-access/account-warehouses';
import { OperatorToken } from '../auth/operator-token';
import type { PriceList } from '../usage/price-list';
import type { WriteKeyRateLimitCeilings } from '../write-keys/rate-limits';
import type { ApiRateLimitOptions } from '../auth/api-rate-limit';
import { PgQueryMeter } from '../warehouse-access/query-meter';
import { createMigratedScratchDatabase, type MigratedScratchDatabase } from '../scratch-data-source';
import { accountWarehousesAt, startScratchWarehouse, type ScratchWarehouse } from './warehouse';

/** Credentials and config an app of this type is created with: the app catalog's valid example. */
export function exampleSettings(appType: string): {
  credentials: Record<string, unknown>;
  config: Record<string, unknown>;
} {
  const definition = appTypeDefinition(appType);
  if (!definition) throw new Error(`no app type ${appType} in the catalog`);
  return structuredClone(definition.example) as {
    credentials: Record<string, unknown>;
    config: Record<string, unknown>;
  };
}

export const TEST_CREDENTIAL_KEYS = `k2:${randomBytes(32).toString('base64')},k1:${randomBytes(32).toString('base64')}`;
/** Ingestion's internal token (resolve only). */
export const TEST_INTERNAL_TOKEN = randomBytes(24).toString('base64url');
const deliveryTokens = new Map(
  forwardingAppTypes.map((appType) => [appType, randomBytes(24).toString('base64url')]),
);
/** The internal token of `delivery --destination <appType>` (lookup of that app type only). */
export function testDeliveryToken(appType: string): string {
  const token = deliveryTokens.get(appType);
  if (!token) throw new Error(`${appType} is no forwarding app type`);
  return token;
}
/** The warehouse consumer's internal token (warehouse resolution and status reports only). */
export const TEST_WAREHOUSE_TOKEN = randomBytes(24).toString('base64url');
/** Every internal caller's test token, as the control plane holds them. */
export const TEST_INTERNAL_TOKENS = new InternalTokens([
  { token: TEST_INTERNAL_TOKEN, caller: { caller: 'ingestion' } },
  { token: TEST_WAREHOUSE_TOKEN, caller: { caller: 'warehouse' } },
  ...[...deliveryTokens].map(([appType, token]) => ({
    token,
    caller: { caller: 'delivery' as const, appType },
  })),
]);

export interface Tenant {
  accountId: string;
  /** A key with every scope. */
  key: string;
  /** Issues another key of this account with exactly `scopes`. */
  keyWith(scopes: Scope[]): Promise<string>;
}

/**
 * One suite's control plane: its own migrated database on the real server, the real Express
 * app, and every log line captured so tests can prove secrets never reach them.
 */
export interface Harness {
  db: MigratedScratchDatabase;
  /** The public listener's app (PORT): it answers 404 on the operator routes. */
  app: Express;
  /** The operator listener's app (OPERATOR_PORT): the operator routes and nothing else. */
  operatorApp: Express;
  logs: string[];
  /** The services behind `app`: the same instances, so a test sees what the API does. */
  services: ControlPlaneServices;
  /**
   * The warehouse the app reads (usage, prechecks, tasks): the one given in the options, or
   * this harness's own empty scratch warehouse; give it to a TaskWorker to read the same.
   */
  warehouse: AccountWarehouses;
  /**
   * The URL of this harness's own scratch warehouse (what `warehouse` reads), for a warehouse
   * consumer to write where the app reads; undefined when the suite brought its own.
   */
  ownWarehouseUrl: string | undefined;
  /** The app's metrics (GET /metrics); give it to a JobRunner or TaskWorker to count theirs too. */
  metrics: ControlPlaneMetrics;
  tenant(features?: string[]): Promise<Tenant>;
  /** supertest with `Authorization: Bearer <key>` set. */
  as(key: string): {
    get(path: string): request.Test;
    post(path: string): request.Test;
    patch(path: string): request.Test;
    put(path: string): request.Test;
    delete(path: string): request.Test;
  };
  close(): Promise<void>;
}

export interface HarnessOptions {
  /**
   * The warehouse the task templates read (tests pass a scratch database); absent: an empty
   * scratch warehouse of the harness's own, never the server's fixed `warehouse` database,
   * which exists only where a dev stack or an earlier step made it.
   */
  warehouse?: AccountWarehouses;
  /**
   * The URL the default warehouse is bootstrapped from (WAREHOUSE_URL); absent: the metered or
   * own scratch warehouse's, else the server's `warehouse` database.
   */
  warehouseUrl?: string;
  /** Opens engines on warehouses (sizes, probes); absent: sizes unknown, checks answer 503. */
  engineFor?: AppDependencies['engineFor'];
  /** OPERATOR_API_TOKEN; absent: the operator routes answer 404. */
  operatorToken?: string;
  /** Off unless given: suites present wrong operator tokens on purpose. */
  operatorTokenFailures?: AppDependencies['operatorTokenFailures'];
  /** Skips the start-up bootstrap: tests of the bootstrap itself run it. */
  skipWarehouseBootstrap?: boolean;
  /** A warehouse database to read through engines that meter into this harness's database. */
  meteredWarehouseUrl?: string;
  prices?: PriceList;
  writeKeyRateLimitCeilings?: WriteKeyRateLimitCeilings;
  /** ACCOUNT_MAX_*; absent: the documented defaults. */
  accountLimits?: AccountLimits;
  /** Off unless given: suites make many requests with one key. */
  apiRateLimit?: ApiRateLimitOptions;
  /** Off unless given: suites present invalid keys on purpose. */
  apiKeyFailures?: AppDependencies['apiKeyFailures'];
  /** Broadcasts tenant changes (tests of revocation give one on a real Redis). */
  tenantChanges?: TenantChangePublisher;
  /** The live debugger's Redis (AppDependencies.debugger); absent: its endpoints answer 503. */
  debugger?: AppDependencies['debugger'];
  /** How saved URLs are judged (AppDependencies.egress): tests give a resolver with fixed answers. */
  egress?: AppDependencies['egress'];
  /** Puts dead letters back for delivery (a KafkaDeadLetterReplayer); absent: replays answer 503. */
  deadLetterReplayer?: AppDependencies['deadLetterReplayer'];
  /** The dead-letter limits, replay limiter and write-key counting (default: the documented defaults). */
  deadLetterOptions?: AppDependencies['deadLetterOptions'];
  /** How source apps' connection tests reach their vendor (tests point them at look-alikes). */
  connectors?: AppDependencies['connectors'];
  /** Off unless given: suites test many connections with one account. */
  connectionTests?: AppDependencies['connectionTests'];
  /** REGULATION_SUBJECTS_PER_MONTH; absent: the documented default. */
  regulationLimits?: AppDependencies['regulationLimits'];
  /** Counts a dry run's rows; absent: dry runs answer 503 until the engines count them. */
  subjectRowCounter?: AppDependencies['subjectRowCounter'];
  /** What an account's tracking plans may hold; absent: the documented caps. */
  trackingPlanLimits?: AppDependencies['trackingPlanLimits'];
  /** Runs the functions test call; absent: it answers 503 function_runtime_unavailable. */
  functionRuntime?: AppDependencies['functionRuntime'];
}

export async function startHarness(label: string, options: HarnessOptions = {}): Promise<Harness> {
  const db = await createMigratedScratchDatabase(label);
  const logs: string[] = [];
  const stream = new PassThrough();
  stream.on('data', (chunk: Buffer) => logs.push(chunk.toString('utf8')));
  const logger = createLogger({ service: 'control-plane-test', stream, level: 'debug' });
  const metered = options.meteredWarehouseUrl
    ? accountWarehousesAt(options.meteredWarehouseUrl, new PgQueryMeter(db.dataSource))
    : undefined;
  let own: ScratchWarehouse | undefined;
  let warehouse = metered?.warehouses ?? options.warehouse;
  if (!warehouse) {
    own = await startScratchWarehouse(`${label} warehouse`);
    warehouse = own.warehouses;
  }
  const deps = {
    dataSource: db.dataSource,
    logger,
    credentialKeys: TEST_CREDENTIAL_KEYS,
    internalTokens: TEST_INTERNAL_TOKENS,
    warehouse,
    prices: options.prices,
    writeKeyRateLimitCeilings: options.writeKeyRateLimitCeilings,
    accountLimits: options.accountLimits,
    apiRateLimit: options.apiRateLimit,
    apiKeyFailures: options.apiKeyFailures,
    tenantChanges: options.tenantChanges,
    debugger: options.debugger,
    egress: options.egress,
    connectors: options.connectors,
    connectionTests: options.connectionTests,
    engineFor: options.engineFor,
    deadLetterReplayer: options.deadLetterReplayer,
    deadLetterOptions: options.deadLetterOptions,
    regulationLimits: options.regulationLimits,
    subjectRowCounter: options.subjectRowCounter,
    trackingPlanLimits: options.trackingPlanLimits,
    functionRuntime: options.functionRuntime,
    operatorToken: new OperatorToken(options.operatorToken),
    operatorTokenFailures: options.operatorTokenFailures,
    metrics: new ControlPlaneMetrics({ dataSource: db.dataSource, logger }),
  };
  const { services, app, operatorApp } = composeApi(deps);
  // As the process does at start: tenants below are placed on this default.
  if (!options.skipWarehouseBootstrap) {
    await services.warehouses.bootstrap(
      // A suite that brings its own reader and names no URL reads through that reader: the
      // default warehouse is then only a record, on the tests' unreachable server (port 1).
      options.warehouseUrl ??
        options.meteredWarehouseUrl ??
        own?.url ??
        'postgres://postgres@127.0.0.1:1/warehouse',
    );
    await services.apps.registerWarehouseApps();
  }
  const accounts = new AccountService(db.dataSource);
  const apiKeys = new ApiKeyService(db.dataSource);
  let tenants = 0;
  return {
    db,
    app,
    operatorApp,
    logs,
    services,
    warehouse,
    ownWarehouseUrl: own?.url,
    metrics: deps.metrics,
    async tenant(features = []) {
      tenants += 1;
      const account = await accounts.create(`Tenant ${tenants}`, features);
      const keyWith = async (scopes: Scope[]) => (await apiKeys.issue(account.id, 'test', scopes)).apiKey;
      return { accountId: account.id, key: await keyWith([...allScopes]), keyWith };
    },
    as(key) {
      const auth = (test: request.Test) => test.set('Authorization', `Bearer ${key}`);
      return {
        get: (path) => auth(request(app).get(path)),
        post: (path) => auth(request(app).post(path)),
        patch: (path) => auth(request(app).patch(path)),
        put: (path) => auth(request(app).put(path)),
        delete: (path) => auth(request(app).delete(path)),
      };
    },
    close: async () => {
      await metered?.close();
      await own?.drop();
      await db.drop();
    },
  };
}
