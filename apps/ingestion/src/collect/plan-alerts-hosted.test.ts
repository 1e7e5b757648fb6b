import { randomUUID } from 'node:crypto';
import { PassThrough } from 'node:stream';
import { TenantUrlPolicy } from '@pipeline/control-plane/apps/tenant-urls';
import { AlertSender } from '@pipeline/control-plane/plan-alerts/alert-sender';
import type { ViolationGeneratedEvent } from '@pipeline/control-plane/plan-alerts/alert-messages';
import { windowStartOf } from '@pipeline/control-plane/plan-alerts/alert-windows';
import { PlanAlertService } from '@pipeline/control-plane/plan-alerts/plan-alert.service';
import { waitUntil } from '@pipeline/control-plane/testing/wait';
import { startLookAlikeVendor, type LookAlikeServer } from '@pipeline/destinations/testing';
import { sharedGuardedFetch } from '@pipeline/egress';
import { createLogger } from '@pipeline/logger';
import { closeRedis, createRedis, type RedisClient } from '@pipeline/redis';
import type { TrackingPlan } from '@pipeline/tracking-plans';
import { collect, event, startHosted, type Hosted } from '../testing/ingestion-harness';

// Violation alerts end to end (docs/tracking-plans.md, "Alerts"): real ingestion holds events
// to a bound plan and counts their violations in a real Redis; the control plane's alert
// sender sums the window from there and POSTs to the webhook look-alike, which checks the
// signature. Ingestion's ledger and the sender share the test's clock.

const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
const SECRET = 'whsec-alerts-hosted-0123456789';
const loopback = ['127.0.0.0/8'];

const plan: TrackingPlan = {
  rules: [
    {
      type: 'track',
      name: 'Order Completed',
      schema: {
        properties: {
          properties: {
            type: 'object',
            required: ['order_id'],
            properties: { order_id: { type: 'string' } },
          },
        },
      },
    },
  ],
};

describe('plan alerts from real ingestion (control plane, PostgreSQL, Redis, Kafka)', () => {
  let h: Hosted;
  let hook: LookAlikeServer;
  let redis: RedisClient;
  // 2026-11-30T10:02:00Z: inside the 10:00-10:05 window.
  let clock = Date.UTC(2026, 10, 30, 10, 2, 0);
  const now = () => clock;
  const logger = createLogger({ service: 'plan-alerts-hosted-test', stream: new PassThrough() });

  beforeAll(async () => {
    h = await startHosted('plan alerts', {
      tenantChanges: true,
      backstopEps: 1_000_000,
      violationCounts: { connection: { REDIS_URL }, now },
    });
    await waitUntil('tenant changes heard', async () => h.tenantChanges?.live);
    hook = await startLookAlikeVendor('webhook', { credentials: { signingSecret: SECRET } });
    redis = createRedis({ REDIS_URL }, { logger });
    await redis.connect();
  }, 60_000);
  afterAll(async () => {
    await hook?.close();
    if (redis) await closeRedis(redis);
    await h.close();
  });

  it('turns 1,000 events missing order_id in one window into one alert with count 1000, then one more', async () => {
    const tenant = h.tenants.a;
    const api = h.controlPlane.as(tenant.apiKey);
    const created = await api.post('/api/v1/tracking-plans').send({ name: `alerts ${randomUUID()}`, plan });
    expect(created.status).toBe(201);
    const planId = (created.body.data as { id: string }).id;
    expect((await api.post(`/api/v1/tracking-plans/${planId}/publish`)).status).toBe(201);
    const bound = await api
      .put(`/api/v1/write-keys/${tenant.openWriteKeyId}/tracking-plan`)
      .send({ planId, version: 'latest', policy: { actions: {} } });
    expect(bound.status).toBe(200);
    // The alert as the API stores it, with the look-alike's loopback address allowed and the test's clock.
    const alerts = new PlanAlertService(
      h.controlPlane.db.dataSource,
      h.controlPlane.services.cipher,
      new TenantUrlPolicy({ allowPrivateRanges: loopback }),
      now,
    );
    await alerts.put(tenant.accountId, planId, {
      url: hook.url,
      windowMinutes: 5,
      enabled: true,
      signingSecret: SECRET,
    });
    expect(new Date((await alerts.get(tenant.accountId, planId)).status.lastWindowEnd).getTime()).toBe(
      windowStartOf(clock, 5),
    );

    const send = (events: Record<string, unknown>[]) =>
      collect(h.app).set('X-Write-Key', tenant.openWriteKey).send({ batch: events });
    const order = (properties: Record<string, unknown>) =>
      event({ event: 'Order Completed', properties, messageId: `order-${randomUUID()}` });
    // The binding is heard once an event comes back committed with the plan.
    await waitUntil(
      'the binding heard',
      async () => {
        const probe = order({ order_id: 'o-1' });
        expect((await send([probe])).status).toBe(202);
        const all = await h.readTopic();
        return all.find((c) => c.event.messageId === probe.messageId)?.plan?.planId === planId;
      },
      15_000,
    );
    const recordedBefore = h.violationStats?.recorded ?? 0;
    for (let i = 0; i < 10; i++) {
      const answer = await send(Array.from({ length: 100 }, () => order({})));
      expect(answer.status).toBe(202);
    }
    await waitUntil(
      '1,000 violations counted',
      async () => h.violationStats?.recorded === recordedBefore + 1000,
      15_000,
    );

    const sender = new AlertSender({
      dataSource: h.controlPlane.db.dataSource,
      redis,
      cipher: h.controlPlane.services.cipher,
      logger,
      fetch: sharedGuardedFetch(loopback),
      intervalMs: 3_600_000,
      concurrency: 2,
      timeoutMs: 5_000,
      now,
    });
    try {
      const run = async () => {
        await sender.tick();
        await sender.idle();
      };
      clock = Date.UTC(2026, 10, 30, 10, 5, 31);
      await run();
      await run();
      const received = () => hook.accepted.map((a) => a.item as unknown as ViolationGeneratedEvent);
      expect(
        received().map((a) => [a.event, a.properties.planId, a.properties.path, a.properties.count]),
      ).toEqual([['Violation Generated', planId, '/properties/order_id', 1000]]);
      expect(received()[0]!.properties).toMatchObject({
        eventType: 'track',
        eventName: 'Order Completed',
        violationCode: 'missing_required',
        versions: [1],
        writeKeyIds: [tenant.openWriteKeyId],
        windowStart: '2026-11-30T10:00:00.000Z',
        windowEnd: '2026-11-30T10:05:00.000Z',
      });

      // Three more in the next window: exactly one more alert.
      clock = Date.UTC(2026, 10, 30, 10, 6, 0);
      expect((await send([order({}), order({}), order({})])).status).toBe(202);
      await waitUntil(
        '3 more counted',
        async () => h.violationStats?.recorded === recordedBefore + 1003,
        15_000,
      );
      clock = Date.UTC(2026, 10, 30, 10, 10, 31);
      await run();
      await run();
      expect(received().map((a) => [a.properties.windowStart, a.properties.count])).toEqual([
        ['2026-11-30T10:00:00.000Z', 1000],
        ['2026-11-30T10:05:00.000Z', 3],
      ]);
    } finally {
      await sender.stop();
    }
  }, 120_000);
});
