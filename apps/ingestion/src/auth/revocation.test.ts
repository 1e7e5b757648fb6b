import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import { TenantDirectory } from '@pipeline/destinations';
import { createLogger } from '@pipeline/logger';
import { createRedis, type Redis } from '@pipeline/redis';
import {
  ControlPlaneClient,
  TenantChangePublisher,
  TenantChangeSubscriber,
  UNSUBSCRIBED_MAX_TTL_MS,
} from '@pipeline/tenancy';
import {
  startHarness as startControlPlane,
  TEST_INTERNAL_TOKEN,
  testDeliveryToken,
  type Harness as ControlPlane,
  type Tenant,
} from '@pipeline/control-plane/testing/harness';
import { webTrackingTo } from '../testing/ingestion-harness';
import { HostedAuthenticator } from './hosted-authenticator';

const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
const HOUR_MS = 3_600_000;
const logger = createLogger({ service: 'revocation-test', stream: new PassThrough() });

/** Polls until `check` resolves true, at most `withinMs`; returns how long it took. */
async function within(withinMs: number, check: () => Promise<boolean>): Promise<number> {
  const started = Date.now();
  for (;;) {
    if (await check()) return Date.now() - started;
    if (Date.now() - started > withinMs) throw new Error(`not within ${withinMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const refused = (authenticator: HostedAuthenticator, key: string) =>
  authenticator.authenticate(key).then(
    () => false,
    (error: { code?: string }) => error.code === 'invalid_write_key',
  );

// Revocation and rotation through Redis (docs/tracking-api.md, "Revoked write keys"): a real control
// plane on PostgreSQL publishes, ingestion's authenticator and the consumers' tenant directory
// hear it on a real Redis, with caches far longer than the bound.
describe('revocation and rotation reach every cache (real PostgreSQL, Redis, control plane)', () => {
  let publisherRedis: Redis;
  let cp: ControlPlane;
  let server: Server;
  let client: ControlPlaneClient;
  /** The amplitude consumer's client: each caller has its own token. */
  let amplitudeClient: ControlPlaneClient;
  let tenant: Tenant;
  const subscribers: TenantChangeSubscriber[] = [];

  beforeAll(async () => {
    // The control plane's client carries a key prefix: channels must not be prefixed.
    publisherRedis = createRedis({ REDIS_URL }, { logger, keyPrefix: 'control-plane:' });
    await publisherRedis.connect();
    cp = await startControlPlane('revocation', {
      tenantChanges: new TenantChangePublisher(publisherRedis, logger),
    });
    server = createServer(cp.app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    client = new ControlPlaneClient(
      `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      TEST_INTERNAL_TOKEN,
      logger,
    );
    amplitudeClient = new ControlPlaneClient(
      `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      testDeliveryToken('amplitude'),
      logger,
    );
    tenant = await cp.tenant();
  });

  afterAll(async () => {
    await Promise.all(subscribers.map((s) => s.stop()));
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await cp.close();
    await publisherRedis.quit();
  });

  async function subscribed(listener: Parameters<typeof TenantChangeSubscriber.start>[1]) {
    const subscriber = TenantChangeSubscriber.start(REDIS_URL, listener, logger);
    subscribers.push(subscriber);
    await within(5000, async () => subscriber.live);
    return subscriber;
  }

  const newWriteKey = async () =>
    (
      await cp
        .as(tenant.key)
        .post('/api/v1/write-keys')
        .send({ name: `k ${Math.random()}` })
    ).body.data as {
      id: string;
      key: string;
    };

  it('a revoked key is refused by an ingestion instance caching keys for an hour, well within 10 s', async () => {
    const authenticator = new HostedAuthenticator(
      client,
      { validTtlMs: HOUR_MS, invalidTtlMs: HOUR_MS, hearsRevocations: () => subscriber.live },
      logger,
    );
    const subscriber = await subscribed((event) => authenticator.invalidate(event));
    const revoked = await newWriteKey();
    const kept = await newWriteKey();
    expect((await authenticator.authenticate(revoked.key)).writeKeyId).toBe(revoked.id);
    expect((await authenticator.authenticate(kept.key)).writeKeyId).toBe(kept.id);
    expect(authenticator.isKnownValid(revoked.key)).toBe(true);

    expect((await cp.as(tenant.key).delete(`/api/v1/write-keys/${revoked.id}`)).status).toBe(200);
    const tookMs = await within(10_000, () => refused(authenticator, revoked.key));
    expect(tookMs).toBeLessThan(10_000);
    // Only that key was dropped: the other is still served from the cache.
    expect(authenticator.isKnownValid(kept.key)).toBe(true);
  });

  it('without a live subscription a valid key is kept at most 10 s', async () => {
    let now = 1_000_000;
    const authenticator = new HostedAuthenticator(
      client,
      { validTtlMs: HOUR_MS, invalidTtlMs: HOUR_MS, hearsRevocations: () => false },
      logger,
      () => now,
    );
    const key = await newWriteKey();
    await authenticator.authenticate(key.key);
    await cp.as(tenant.key).delete(`/api/v1/write-keys/${key.id}`);
    now += UNSUBSCRIBED_MAX_TTL_MS - 1;
    expect(authenticator.isKnownValid(key.key)).toBe(true);
    now += 1;
    expect(authenticator.isKnownValid(key.key)).toBe(false);
    expect(await refused(authenticator, key.key)).toBe(true);
    expect(UNSUBSCRIBED_MAX_TTL_MS).toBe(10_000);
  });

  it('both caches ask the control plane once for many concurrent lookups of one key (one TenantCache)', async () => {
    const authenticator = new HostedAuthenticator(
      client,
      { validTtlMs: HOUR_MS, invalidTtlMs: HOUR_MS, hearsRevocations: () => true },
      logger,
    );
    const directory = new TenantDirectory(
      amplitudeClient,
      { ttlMs: HOUR_MS, hearsChanges: () => true },
      logger,
    );
    const key = await newWriteKey();
    const tenants = await Promise.all(Array.from({ length: 40 }, () => authenticator.authenticate(key.key)));
    expect(new Set(tenants.map((t) => t.writeKeyId))).toEqual(new Set([key.id]));
    expect(authenticator.lookups).toBe(1);
    const records = await Promise.all(Array.from({ length: 40 }, () => directory.forWriteKey(key.id)));
    expect(new Set(records.map((t) => t?.accountId))).toEqual(new Set([tenant.accountId]));
    expect(directory.lookups).toBe(1);
    // A revoked key is unknown to ingestion at once; the directory still has its tenant.
    await cp.as(tenant.key).delete(`/api/v1/write-keys/${key.id}`);
    authenticator.invalidate({ kind: 'write_key_revoked', accountId: tenant.accountId, writeKeyId: key.id });
    directory.invalidate({ kind: 'write_key_revoked', accountId: tenant.accountId, writeKeyId: key.id });
    expect(await refused(authenticator, key.key)).toBe(true);
    expect((await directory.forWriteKey(key.id))?.writeKeyId).toBe(key.id);
    expect([authenticator.lookups, directory.lookups]).toEqual([2, 2]);
  });

  it('rotated credentials replace the cached ones in the forwarding consumers', async () => {
    const directory = new TenantDirectory(
      amplitudeClient,
      { ttlMs: HOUR_MS, hearsChanges: () => subscriber.live },
      logger,
    );
    const subscriber = await subscribed((event) => directory.invalidate(event));
    const api = cp.as(tenant.key);
    const amplitude = await webTrackingTo(api, {
      appType: 'amplitude',
      displayName: 'Amp',
      credentials: { apiKey: 'old-key' },
    });
    const key = await newWriteKey();
    const apiKeyOf = async () =>
      (await directory.forWriteKey(key.id))?.destinations.find((d) => d.appId === amplitude)?.credentials
        .apiKey;
    await within(10_000, async () => (await apiKeyOf()) === 'old-key');

    expect(
      (await api.patch(`/api/v1/apps/${amplitude}`).send({ credentials: { apiKey: 'rotated-key' } })).status,
    ).toBe(200);
    const tookMs = await within(10_000, async () => (await apiKeyOf()) === 'rotated-key');
    expect(tookMs).toBeLessThan(10_000);
  });
});
