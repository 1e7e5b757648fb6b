import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import { TenantDirectory } from '@pipeline/destinations';
import { createLogger } from '@pipeline/logger';
import { createRedis, type RedisClient } from '@pipeline/redis';
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
import { waitUntil } from '@pipeline/control-plane/testing/wait';
import { webTrackingTo } from '../testing/ingestion-harness';
import { HostedAuthenticator } from './hosted-authenticator';

const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
const HOUR_MS = 3_600_000;
const logger = createLogger({ service: 'revocation-test', stream: new PassThrough() });

/**
 * The caches' clock, stopped: no entry ever reaches its TTL, so whatever a cache drops was
 * dropped by a change it heard.
 */
const STOPPED = () => Date.UTC(2026, 0, 15, 12, 0, 0);

const refused = (authenticator: HostedAuthenticator, key: string) =>
  authenticator.authenticate(key).then(
    () => false,
    (error: { code?: string }) => error.code === 'invalid_write_key',
  );

// Revocation and rotation through Redis (docs/tracking-api.md, "Revoked write keys"): a real control
// plane on PostgreSQL publishes, ingestion's authenticator and the consumers' tenant directory
// hear it on a real Redis, with caches that never expire on their own (a stopped clock). Two
// accounts: a change of A's drops A's entries only.
describe('revocation and rotation reach every cache (real PostgreSQL, Redis, control plane)', () => {
  let publisherRedis: RedisClient;
  let cp: ControlPlane;
  let server: Server;
  let client: ControlPlaneClient;
  /** The amplitude consumer's client: each caller has its own token. */
  let amplitudeClient: ControlPlaneClient;
  let tenant: Tenant;
  /** Another account: its cached entries must outlive every change of `tenant`'s. */
  let other: Tenant;
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
    other = await cp.tenant();
  });

  afterAll(async () => {
    await Promise.all(subscribers.map((s) => s.stop()));
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await cp.close();
    await publisherRedis.quit();
  });

  async function subscribed(listener: Parameters<typeof TenantChangeSubscriber.start>[1]) {
    const subscriber = TenantChangeSubscriber.start({ REDIS_URL }, listener, logger);
    subscribers.push(subscriber);
    await waitUntil('the subscription live', async () => subscriber.live);
    return subscriber;
  }

  const newWriteKey = async (of: Tenant = tenant) =>
    (
      await cp
        .as(of.key)
        .post('/api/v1/write-keys')
        .send({ name: `k ${Math.random()}` })
    ).body.data as {
      id: string;
      key: string;
    };

  it("a revoked key of A is refused by an ingestion instance that heard it; B's and A's other keys stay cached", async () => {
    const authenticator = new HostedAuthenticator(
      client,
      { validTtlMs: HOUR_MS, invalidTtlMs: HOUR_MS, hearsRevocations: () => subscriber.live },
      logger,
      STOPPED,
    );
    const subscriber = await subscribed((event) => authenticator.invalidate(event));
    const revoked = await newWriteKey();
    const kept = await newWriteKey();
    const others = await newWriteKey(other);
    expect((await authenticator.authenticate(revoked.key)).writeKeyId).toBe(revoked.id);
    expect((await authenticator.authenticate(kept.key)).writeKeyId).toBe(kept.id);
    expect(await authenticator.authenticate(others.key)).toMatchObject({
      accountId: other.accountId,
      writeKeyId: others.id,
    });
    expect(authenticator.isKnownValid(revoked.key)).toBe(true);

    expect((await cp.as(tenant.key).delete(`/api/v1/write-keys/${revoked.id}`)).status).toBe(200);
    // Bounded, as every wait; the cache cannot expire on its stopped clock, so only the heard
    // revocation can make this true.
    await waitUntil('the revoked key refused', () => refused(authenticator, revoked.key), 10_000);
    // Only that key was dropped: A's other key and B's are still served from the cache.
    expect([authenticator.isKnownValid(kept.key), authenticator.isKnownValid(others.key)]).toEqual([
      true,
      true,
    ]);
    expect(authenticator.lookups).toBe(4);
    expect(await authenticator.authenticate(others.key)).toMatchObject({ accountId: other.accountId });
    expect(authenticator.lookups).toBe(4);
  });

  it("a rotated key's old secret is refused by an ingestion instance that heard it, its new one accepted; others stay cached", async () => {
    const authenticator = new HostedAuthenticator(
      client,
      { validTtlMs: HOUR_MS, invalidTtlMs: HOUR_MS, hearsRevocations: () => subscriber.live },
      logger,
      STOPPED,
    );
    const subscriber = await subscribed((event) => authenticator.invalidate(event));
    const rotating = await newWriteKey();
    const kept = await newWriteKey();
    const others = await newWriteKey(other);
    for (const k of [rotating, kept, others])
      expect((await authenticator.authenticate(k.key)).writeKeyId).toBe(k.id);
    expect(authenticator.lookups).toBe(3);

    const rotated = await cp.as(tenant.key).post(`/api/v1/write-keys/${rotating.id}/rotate`);
    expect(rotated.status).toBe(200);
    const newKey = rotated.body.data.key as string;
    // Only the heard change can drop the old secret: the cache's clock is stopped.
    await waitUntil('the old secret refused', () => refused(authenticator, rotating.key), 10_000);
    expect(await authenticator.authenticate(newKey)).toMatchObject({
      writeKeyId: rotating.id,
      accountId: tenant.accountId,
    });
    expect([authenticator.isKnownValid(kept.key), authenticator.isKnownValid(others.key)]).toEqual([
      true,
      true,
    ]);
    // The old secret's lookup (refused) and the new one's: nothing else was asked again.
    expect(authenticator.lookups).toBe(5);
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

  it("A's rotated credentials replace the cached ones in the forwarding consumers; B's stay cached", async () => {
    const directory = new TenantDirectory(
      amplitudeClient,
      { ttlMs: HOUR_MS, hearsChanges: () => subscriber.live },
      logger,
      STOPPED,
    );
    const subscriber = await subscribed((event) => directory.invalidate(event));
    const api = cp.as(tenant.key);
    const amplitude = await webTrackingTo(api, {
      appType: 'amplitude',
      displayName: 'Amp',
      credentials: { apiKey: 'old-key' },
    });
    const otherAmplitude = await webTrackingTo(cp.as(other.key), {
      appType: 'amplitude',
      displayName: 'Amp',
      credentials: { apiKey: 'other-key' },
    });
    const key = await newWriteKey();
    const otherKey = await newWriteKey(other);
    const apiKeyOf = async (writeKeyId: string, appId: string) =>
      (await directory.forWriteKey(writeKeyId))?.destinations.find((d) => d.appId === appId)?.credentials
        .apiKey;
    await waitUntil('the old key cached', async () => (await apiKeyOf(key.id, amplitude)) === 'old-key');
    expect(await apiKeyOf(otherKey.id, otherAmplitude)).toBe('other-key');
    const lookups = directory.lookups;

    expect(
      (await api.patch(`/api/v1/apps/${amplitude}`).send({ credentials: { apiKey: 'rotated-key' } })).status,
    ).toBe(200);
    await waitUntil(
      'the rotated key',
      async () => (await apiKeyOf(key.id, amplitude)) === 'rotated-key',
      10_000,
    );
    // A's entry was asked again (once the change was heard); B's is still the cached one.
    expect(directory.lookups).toBeGreaterThan(lookups);
    const afterRotation = directory.lookups;
    expect(await apiKeyOf(otherKey.id, otherAmplitude)).toBe('other-key');
    expect(directory.lookups).toBe(afterRotation);
  });
});
