import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import request from 'supertest';
import { AccountService } from './accounts/account.service';
import { CredentialCipher } from './apps/credential-cipher';
import { ApiKeyService } from './auth/api-key.service';
import { scopes } from './auth/scopes';
import { createMigratedScratchDatabase, type MigratedScratchDatabase } from './scratch-data-source';
import {
  exited,
  killAll,
  requireBuiltControlPlane,
  startControlPlaneProcess,
} from './testing/control-plane-process';
import { startScratchWarehouse, type ScratchWarehouse } from './testing/warehouse';
import { WarehousePlacements } from './warehouse-registry/warehouse-placements';
import { WarehouseRegistry } from './warehouse-registry/warehouse-registry';

// The built control plane restarted with CREDENTIALS_ENCRYPTION_KEYS made anew, as a second
// clone of the dev stack on the same database does (a new .cache/dev-secrets.env with the same
// key id `dev1`): the default warehouse is sealed again from WAREHOUSE_URL, so the warehouse
// consumer's resolve answers; whatever else the keys cannot open is said once, with the fix,
// in the log, in the warehouse's status (the tenant's view, which the console shows) and in the
// app's detail, and requests meeting it answer 503 `credentials_unreadable`, never a 500 each.

const keyOf = () => randomBytes(32).toString('base64');

describe('the control plane restarted with its credential keys made anew (real PostgreSQL)', () => {
  let db: MigratedScratchDatabase;
  let warehouse: ScratchWarehouse;
  const processes: ChildProcess[] = [];
  const operatorToken = randomBytes(24).toString('hex');
  const warehouseToken = randomBytes(24).toString('hex');
  const amplitudeToken = randomBytes(24).toString('hex');
  const original = `dev1:${keyOf()}`;
  const madeAnew = `dev1:${keyOf()}`;
  // The original key restored, after a new active one.
  const restoredKeys = `dev2:${keyOf()},${original}`;
  // Trust authentication: the server takes any password, so the URL's is what the registry seals.
  const urlWithPassword = (password: string) =>
    warehouse.url.replace('postgres://postgres@', `postgres://postgres:${password}@`);

  const start = (keys: string, warehouseUrl: string) =>
    startControlPlaneProcess(
      (port) => ({
        ...process.env,
        DATABASE_URL: db.url,
        WAREHOUSE_URL: warehouseUrl,
        CREDENTIALS_ENCRYPTION_KEYS: keys,
        OPERATOR_API_TOKEN: operatorToken,
        INTERNAL_TOKEN_INGESTION: randomBytes(24).toString('hex'),
        INTERNAL_TOKEN_DELIVERY_WAREHOUSE: warehouseToken,
        INTERNAL_TOKEN_DELIVERY_AMPLITUDE: amplitudeToken,
        HOST: '127.0.0.1',
        PORT: String(port),
        LOG_LEVEL: 'info',
        LOG_FORMAT: 'json',
        TASK_WORKER_ENABLED: 'false',
        SCHEDULER_ENABLED: 'false',
        DEAD_LETTER_INDEX_ENABLED: 'false',
        API_RATE_LIMIT_ENABLED: 'false',
        SHUTDOWN_TIMEOUT_MS: '60000',
      }),
      processes,
    );
  type Started = Awaited<ReturnType<typeof start>>;

  const stop = async (cp: Started) => {
    cp.child.kill('SIGTERM');
    expect(await exited(cp.child)).toBe(0);
  };
  const logLines = (cp: Started) =>
    cp
      .stdout()
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as Record<string, unknown>);

  beforeAll(async () => {
    requireBuiltControlPlane();
    db = await createMigratedScratchDatabase('credential keys replaced');
    warehouse = await startScratchWarehouse('credential keys replaced warehouse');
  });
  afterAll(async () => {
    killAll(processes);
    await warehouse?.drop();
    await db?.drop();
  });

  it('seals the default warehouse again, and says once what else the new keys cannot open', async () => {
    // The first start, with the original key: the default warehouse, an account on it, an
    // Amplitude app with its key, a second platform warehouse with a password of its own.
    const first = await start(original, urlWithPassword('first-Pa55'));
    const account = await new AccountService(db.dataSource).create('Keys replaced', []);
    const other = await new AccountService(db.dataSource).create('On the second warehouse', []);
    const apiKey = (await new ApiKeyService(db.dataSource).issue(account.id, 'test', [...scopes])).apiKey;
    const api = (method: 'get' | 'post', path: string) =>
      request(first.base)[method](path).set('Authorization', `Bearer ${apiKey}`);
    const site = await api('post', '/api/v1/apps').send({ appType: 'web_tracking', displayName: 'Site' });
    const amplitude = await api('post', '/api/v1/apps').send({
      appType: 'amplitude',
      displayName: 'Amplitude',
      credentials: { apiKey: 'amp-key-0123456789' },
    });
    expect([site.status, amplitude.status]).toEqual([201, 201]);
    const integration = await api('post', '/api/v1/integrations').send({
      sourceAppId: site.body.data.id,
      destinationAppId: amplitude.body.data.id,
      dataType: 'events',
      config: { global: {}, tasks: [{ task_type: 'events' }] },
      schedule: { frequencyValue: 1, frequencyUnit: 'hours', rollingWindowDays: 1 },
    });
    expect(integration.status).toBe(201);
    const writeKey = await api('post', '/api/v1/write-keys').send({ name: 'site' });
    expect(writeKey.status).toBe(201);
    // A tracking plan's violation alert, its signing secret sealed with the same key.
    const plan = await api('post', '/api/v1/tracking-plans').send({ name: 'Checkout', plan: { rules: [] } });
    expect(plan.status).toBe(201);
    const alert = await request(first.base)
      .put(`/api/v1/tracking-plans/${plan.body.data.id}/alert`)
      .set('Authorization', `Bearer ${apiKey}`)
      .send({
        url: 'https://1.1.1.1/hooks/violations',
        windowMinutes: 60,
        enabled: true,
        signingSecret: 's'.repeat(32),
      });
    expect(alert.status).toBe(200);
    const secondWarehouse = await request(first.operatorBase)
      .post('/api/v1/operator/warehouses')
      .set('Authorization', `Bearer ${operatorToken}`)
      .send({
        name: 'second',
        host: 'warehouse-2.internal',
        port: 6432,
        database: 'wh2',
        user: 'loader2',
        password: 'second-Secret-91b2',
        tlsMode: 'verify-full',
        maxConnections: 4,
      });
    expect(secondWarehouse.status).toBe(201);
    await new WarehousePlacements(
      db.dataSource,
      new WarehouseRegistry(db.dataSource, new CredentialCipher(original)),
    ).place(other.id, 'second');
    const otherKey = (await new ApiKeyService(db.dataSource).issue(other.id, 'test', [...scopes])).apiKey;
    await stop(first);

    // The second start: the same key id, another key.
    const second = await start(madeAnew, urlWithPassword('first-Pa55'));
    const resolved = await request(second.base)
      .post('/internal/v1/warehouses/resolve')
      .set('Authorization', `Bearer ${warehouseToken}`)
      .send({ accountId: account.id });
    expect(resolved.status).toBe(200);
    expect(resolved.body.data.connection).toMatchObject({
      database: warehouse.url.split('/').pop(),
      password: 'first-Pa55',
    });

    // What the keys cannot open answers 503 credentials_unreadable, however often it is asked.
    const lookups = await Promise.all(
      [1, 2, 3, 4, 5].map(() =>
        request(second.base)
          .post('/internal/v1/write-keys/lookup')
          .set('Authorization', `Bearer ${amplitudeToken}`)
          .send({ writeKeyId: writeKey.body.data.id }),
      ),
    );
    for (const lookup of lookups)
      expect([lookup.status, lookup.body.code]).toEqual([503, 'credentials_unreadable']);
    // The key's id is the operator's: in the log and the warehouse's status, never in an answer.
    expect(lookups[0]!.body.detail).toBe(
      "The stored credentials cannot be opened: this service's encryption key of that name is not the one that sealed them (it was replaced, or the stored value altered); an operator must restore the original key, or the credentials must be entered again",
    );
    expect(JSON.stringify(lookups.map((l) => l.body))).not.toContain('dev1');
    const app = await request(second.base)
      .get(`/api/v1/apps/${amplitude.body.data.id}`)
      .set('Authorization', `Bearer ${apiKey}`);
    expect(app.status).toBe(200);
    expect(app.body.data).toMatchObject({
      displayName: 'Amplitude',
      credentials: null,
      credentialsError: { code: 'credentials_unreadable' },
    });
    expect(app.body.data.credentialsError.message).toContain('entered again');
    expect(app.text).not.toContain('dev1');
    // The tenant's view of its warehouse (the console's warehouse page) says why and what fixes it.
    const tenantView = await request(second.base)
      .get('/api/v1/warehouse')
      .set('Authorization', `Bearer ${otherKey}`);
    expect(tenantView.status).toBe(200);
    expect(tenantView.body.data.status).toBe('misconfigured');
    // What fixes it, not the key's name: that is the operator's (log, operator API).
    expect(tenantView.body.data.statusDetail).toMatch(/^credentials_unreadable: .*restore the key/);
    expect(tenantView.body.data.statusDetail).not.toContain('dev1');

    const lines = logLines(second);
    const resealed = lines.filter((line) => String(line.message).includes('sealed again from WAREHOUSE_URL'));
    expect(resealed).toHaveLength(1);
    expect(resealed[0]!.message).toContain('key dev1');
    const told = lines.filter((line) => line.message === 'stored credentials cannot be opened');
    expect(told).toHaveLength(1);
    expect(told[0]).toMatchObject({
      level: 'error',
      keyId: 'dev1',
      reason: 'key_differs',
      warehouses: ['second'],
      apps: 1,
      appIds: [amplitude.body.data.id],
      planAlerts: [plan.body.data.id],
    });
    expect(String(told[0]!.fix)).toContain('CREDENTIALS_ENCRYPTION_KEYS');
    expect(lines.filter((line) => line.message === 'request failed')).toEqual([]);
    expect(second.stdout()).not.toContain('first-Pa55');
    expect(second.stdout()).not.toContain('second-Secret-91b2');
    await stop(second);

    // The original key restored beside a new active one: everything opens again, and the
    // second warehouse's status is active again without waiting for a consumer's report.
    const third = await start(restoredKeys, urlWithPassword('first-Pa55'));
    const restored = await request(third.base)
      .get(`/api/v1/apps/${amplitude.body.data.id}`)
      .set('Authorization', `Bearer ${apiKey}`);
    expect(restored.body.data.credentials).toEqual({ apiKey: expect.stringMatching(/^\*+/) });
    expect(restored.body.data.credentialsError).toBeUndefined();
    const lookup = await request(third.base)
      .post('/internal/v1/write-keys/lookup')
      .set('Authorization', `Bearer ${amplitudeToken}`)
      .send({ writeKeyId: writeKey.body.data.id });
    expect(lookup.status).toBe(200);
    const activeAgain = await request(third.base)
      .get('/api/v1/warehouse')
      .set('Authorization', `Bearer ${otherKey}`);
    expect([activeAgain.body.data.status, activeAgain.body.data.statusDetail]).toEqual(['active', null]);
    expect(logLines(third).filter((line) => line.message === 'stored credentials cannot be opened')).toEqual(
      [],
    );
    await stop(third);

    // WAREHOUSE_URL with another password for the same server: the default follows it.
    const fourth = await start(restoredKeys, urlWithPassword('rotated-Pa55'));
    const rotated = await request(fourth.base)
      .post('/internal/v1/warehouses/resolve')
      .set('Authorization', `Bearer ${warehouseToken}`)
      .send({ accountId: account.id });
    expect(rotated.body.data.connection.password).toBe('rotated-Pa55');
    expect(
      logLines(fourth).filter((line) => String(line.message).includes('holds another password')),
    ).toHaveLength(1);
    await stop(fourth);
  }, 240_000);
});
