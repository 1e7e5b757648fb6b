import { PassThrough } from 'node:stream';
import { createLogger } from '@pipeline/logger';
import { closeRedis, createRedis, type RedisClient } from '@pipeline/redis';
import { TenantChangePublisher, TenantChangeSubscriber, type TenantChangeEvent } from '@pipeline/tenancy';
import { startHarness, type Harness, type Tenant } from '../testing/harness';
import { waitUntil } from '../testing/wait';

const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
const quiet = createLogger({ service: 'function-broadcast-test', stream: new PassThrough() });

// The delivery consumers cache each tenant record with the function versions it binds; a
// binding, an unbinding or a deletion must reach those caches through Redis. A draft edit or a
// publish changes nothing bound, so it is not broadcast.
describe('function changes reach the caches (real PostgreSQL, Redis)', () => {
  let redis: RedisClient;
  let subscriber: TenantChangeSubscriber;
  const heard: TenantChangeEvent[] = [];
  let h: Harness;
  let t: Tenant;

  beforeAll(async () => {
    redis = createRedis({ REDIS_URL }, { logger: quiet, keyPrefix: 'control-plane:' });
    await redis.connect();
    subscriber = TenantChangeSubscriber.start({ REDIS_URL }, (event) => heard.push(event), quiet);
    await waitUntil('subscribed to tenant changes', async () => subscriber.live);
    h = await startHarness('function broadcast', { tenantChanges: new TenantChangePublisher(redis, quiet) });
    t = await h.tenant();
  });
  afterAll(async () => {
    await h.close();
    await subscriber.stop();
    await closeRedis(redis);
  });

  const heardFor = (accountId: string) =>
    heard.filter((event) => event.kind === 'tenant_changed' && event.accountId === accountId).length;
  /** Runs `step` and waits (bounded) for one more tenant_changed of the account than before it. */
  const broadcasts = async (what: string, step: () => Promise<unknown>) => {
    const before = heardFor(t.accountId);
    await step();
    await waitUntil(what, async () => heardFor(t.accountId) === before + 1, 5_000);
  };

  it('broadcasts tenant_changed on bind, rebind, unbind and delete, and not on an edit or publish', async () => {
    const api = h.as(t.key);
    const fn = (
      await api
        .post('/api/v1/functions')
        .send({ name: 'Live', kind: 'destination', code: 'export const transform = (e) => e;' })
        .expect(201)
    ).body.data as { id: string };
    const before = heardFor(t.accountId);
    const v1 = (await api.post(`/api/v1/functions/${fn.id}/versions`).expect(201)).body.data as {
      id: string;
    };
    await api
      .patch(`/api/v1/functions/${fn.id}`)
      .send({ code: 'export const transform = () => null;' })
      .expect(200);
    const v2 = (await api.post(`/api/v1/functions/${fn.id}/versions`).expect(201)).body.data as {
      id: string;
    };

    await broadcasts('the binding heard', () =>
      api.put('/api/v1/warehouse/function').send({ functionVersionId: v2.id }).expect(200),
    );
    // Nothing before the binding was broadcast: edits and publishes change nothing bound.
    expect(heardFor(t.accountId)).toBe(before + 1);
    await broadcasts('the rollback heard', () =>
      api.put('/api/v1/warehouse/function').send({ functionVersionId: v1.id }).expect(200),
    );
    await broadcasts('the unbinding heard', () => api.delete('/api/v1/warehouse/function').expect(204));
    await broadcasts('the deletion heard', () => api.delete(`/api/v1/functions/${fn.id}`).expect(204));
  });
});
