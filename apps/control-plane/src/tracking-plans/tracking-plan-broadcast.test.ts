import { PassThrough } from 'node:stream';
import { createLogger } from '@pipeline/logger';
import { closeRedis, createRedis, type RedisClient } from '@pipeline/redis';
import { TenantChangePublisher, TenantChangeSubscriber, type TenantChangeEvent } from '@pipeline/tenancy';
import { startHarness, type Harness, type Tenant } from '../testing/harness';
import { waitUntil } from '../testing/wait';

const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
const quiet = createLogger({ service: 'tracking-plan-broadcast-test', stream: new PassThrough() });

// Ingestion holds a key's events to the plan version its cached tenant record names; each
// change of that version (publish, bind, unbind, delete) must reach its cache through Redis.
describe('tracking plan changes reach the caches (real PostgreSQL, Redis)', () => {
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
    h = await startHarness('tracking plan broadcast', {
      tenantChanges: new TenantChangePublisher(redis, quiet),
    });
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

  it('broadcasts tenant_changed on publish, bind, unbind and delete, and not on a draft edit', async () => {
    const plan = (
      await h
        .as(t.key)
        .post('/api/v1/tracking-plans')
        .send({ name: 'Live', plan: { rules: [{ type: 'track', name: 'A', schema: {} }] } })
        .expect(201)
    ).body.data as { id: string };
    const key = (await h.as(t.key).post('/api/v1/write-keys').send({ name: 'site' })).body.data as {
      id: string;
    };

    await broadcasts('the publish heard', () =>
      h.as(t.key).post(`/api/v1/tracking-plans/${plan.id}/publish`).expect(201),
    );
    await broadcasts('the binding heard', () =>
      h
        .as(t.key)
        .put(`/api/v1/write-keys/${key.id}/tracking-plan`)
        .send({ planId: plan.id, version: 'latest', policy: { actions: { unplanned_event: 'quarantine' } } })
        .expect(200),
    );
    // A draft changes nothing a key is held to: no broadcast. The next publish is heard once.
    const beforeDraft = heardFor(t.accountId);
    await h
      .as(t.key)
      .put(`/api/v1/tracking-plans/${plan.id}/draft`)
      .send({ rules: [{ type: 'track', name: 'B', schema: {} }] })
      .expect(200);
    await broadcasts('the second publish heard', () =>
      h.as(t.key).post(`/api/v1/tracking-plans/${plan.id}/publish`).expect(201),
    );
    expect(heardFor(t.accountId)).toBe(beforeDraft + 1);
    await broadcasts('the unbinding heard', () =>
      h.as(t.key).delete(`/api/v1/write-keys/${key.id}/tracking-plan`).expect(204),
    );
    await broadcasts('the deletion heard', () =>
      h.as(t.key).delete(`/api/v1/tracking-plans/${plan.id}`).expect(204),
    );
  });
});
