import { randomUUID } from 'node:crypto';
import { PassThrough } from 'node:stream';
import { createLogger } from '@pipeline/logger';
import { closeRedis, createRedis, type RedisClient } from '@pipeline/redis';
import { startHarness, type Harness, type Tenant } from '../testing/harness';
import { ConnectionAttemptLimit } from './connection-attempts';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const LIMIT = 10;
const logger = createLogger({ service: 'control-plane-test', stream: new PassThrough() });

// Security review 2026-11-29, finding 9: a connection test, and a save of a warehouse app that
// tests the new password, each answer a distinct code (refused, TLS, login, database). Unbounded,
// an account could guess a third party's password or scan its ports from the service's
// addresses at the API's request rate. Counted per account in a real Redis.
describe('connection tests per account and minute (real PostgreSQL and Redis)', () => {
  let h: Harness;
  let redis: RedisClient;
  const keyPrefix = `test-${randomUUID()}:`;

  beforeAll(async () => {
    redis = createRedis({ REDIS_URL }, { logger, keyPrefix });
    await redis.connect();
    h = await startHarness('connection test limit', {
      // Port 9 on loopback: nothing listens, every connection is refused at once.
      connectors: { baseUrls: { hubspot: 'http://127.0.0.1:9' } },
      egress: {
        allowPrivateRanges: ['127.0.0.0/8'],
        resolve: async (name) =>
          name === 'wh.example.com' ? ['127.0.0.1'] : Promise.reject(new Error(name)),
      },
      connectionTests: { perMinute: LIMIT, redis },
    });
  });
  afterAll(async () => {
    await h.close();
    await closeRedis(redis);
  });

  const warehouseConfig = {
    host: 'wh.example.com',
    port: 9,
    database: 'analytics',
    user: 'loader',
    tlsMode: 'disable',
  };
  const createApp = async (t: Tenant, body: Record<string, unknown>) => {
    const created = await h.as(t.key).post('/api/v1/apps').send(body);
    expect(created.status).toBe(201);
    return created.body.data.id as string;
  };
  const testConnection = (t: Tenant, id: string) =>
    h.as(t.key).post(`/api/v1/apps/${id}/test-connection`).send();
  const guess = (t: Tenant, id: string, n: number) =>
    h
      .as(t.key)
      .patch(`/api/v1/apps/${id}`)
      .send({ credentials: { password: `guess-${n}` } });
  const createWarehouse = (t: Tenant, n: number) =>
    h
      .as(t.key)
      .post('/api/v1/apps')
      .send({
        appType: 'postgres_warehouse',
        displayName: `wh ${n}`,
        config: warehouseConfig,
        credentials: { password: `guess-${n}` },
      });

  it('answers 429 connection_tests_rate_limited past the limit, whichever request connects, per account', async () => {
    const a = await h.tenant();
    const b = await h.tenant();
    // Neither save connects: a source app is not tested on save, a warehouse draft has no password.
    const hubspot = await createApp(a, {
      appType: 'hubspot',
      displayName: 'hs',
      credentials: { accessToken: 'pat-1' },
    });
    const draft = await createApp(a, {
      appType: 'postgres_warehouse',
      displayName: 'draft',
      config: warehouseConfig,
    });

    const codes: string[] = [];
    for (let n = 0; n < 4; n += 1) codes.push((await testConnection(a, hubspot)).body.code);
    for (let n = 0; n < 3; n += 1) codes.push((await guess(a, draft, n)).body.code);
    for (let n = 0; n < 3; n += 1) codes.push((await createWarehouse(a, n)).body.code);
    expect(codes).toEqual([
      ...Array(4).fill('connection_failed'),
      ...Array(6).fill('warehouse_connection_refused'),
    ]);

    for (const refused of [
      await testConnection(a, hubspot),
      await guess(a, draft, 99),
      await createWarehouse(a, 99),
    ]) {
      expect([refused.status, refused.body.code]).toEqual([429, 'connection_tests_rate_limited']);
      const retryAfter = Number(refused.headers['retry-after']);
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(retryAfter).toBeLessThanOrEqual(60);
    }
    // What opens no connection is not limited: a rename.
    expect((await h.as(a.key).patch(`/api/v1/apps/${draft}`).send({ displayName: 'renamed' })).status).toBe(
      200,
    );
    // Another account has its own budget.
    const other = await createApp(b, {
      appType: 'hubspot',
      displayName: 'hs',
      credentials: { accessToken: 'pat-2' },
    });
    expect((await testConnection(b, other)).body.code).toBe('connection_failed');
    // Counted in Redis, where every instance counts: another instance refuses account A too.
    expect(Number(await redis.get(`connection-tests:account:${a.accountId}`))).toBe(LIMIT + 3);
    const second = new ConnectionAttemptLimit({ perMinute: LIMIT, redis, logger });
    await expect(second.take(a.accountId)).rejects.toMatchObject({
      status: 429,
      code: 'connection_tests_rate_limited',
    });
    await expect(second.take(b.accountId)).resolves.toBeUndefined();
  });
});
