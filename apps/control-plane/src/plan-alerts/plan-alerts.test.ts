import { randomUUID } from 'node:crypto';
import { PassThrough } from 'node:stream';
import { startLookAlikeVendor, type LookAlikeServer } from '@pipeline/destinations/testing';
import { sharedGuardedFetch } from '@pipeline/egress';
import { createLogger } from '@pipeline/logger';
import {
  closeRedis,
  createRedis,
  ViolationLedger,
  type RedisClient,
  type ViolationKey,
} from '@pipeline/redis';
import { startHarness, type Harness, type Tenant } from '../testing/harness';
import { waitUntil } from '../testing/wait';
import { AlertSender } from './alert-sender';
import { windowStartOf } from './alert-windows';
import type { ViolationGeneratedEvent } from './alert-messages';

// Violation alerts against a real control plane on PostgreSQL, ingestion's counts in a real
// Redis (written by the ViolationLedger ingestion uses) and the webhook look-alike, which
// checks each request's signature. The clock is the test's: windows end when the test says.

const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
const SECRET = 'whsec-alerts-test-0123456789';
const MINUTE = 60_000;
const loopback = ['127.0.0.0/8'];

describe('plan alerts (real PostgreSQL, Redis, webhook look-alike)', () => {
  let h: Harness;
  let redis: RedisClient;
  let hook: LookAlikeServer;
  // 2026-11-30T10:00:00Z, a multiple of every window.
  let clock = Date.UTC(2026, 10, 30, 10, 0, 0);
  const now = () => clock;
  const logger = createLogger({
    service: 'plan-alerts-test',
    stream: process.env.ALERT_DEBUG ? process.stderr : new PassThrough(),
    level: process.env.ALERT_DEBUG ? 'debug' : 'error',
  });
  const ledger = () => new ViolationLedger(redis, logger, {}, now);
  const senders: AlertSender[] = [];

  const sender = (options: Partial<ConstructorParameters<typeof AlertSender>[0]> = {}) => {
    const made = new AlertSender({
      dataSource: h.db.dataSource,
      redis,
      cipher: h.services.cipher,
      logger,
      fetch: sharedGuardedFetch(loopback),
      intervalMs: 3_600_000,
      concurrency: 4,
      timeoutMs: 2_000,
      now,
      retry: { maxAttempts: 3, baseDelayMs: 10, maxDelayMs: 50 },
      ...options,
    });
    senders.push(made);
    return made;
  };
  const run = async (s: AlertSender) => {
    await s.tick();
    await s.idle();
  };

  beforeAll(async () => {
    h = await startHarness('plan alerts', { egress: { allowPrivateRanges: loopback } });
    redis = createRedis({ REDIS_URL }, { logger });
    await redis.connect();
    hook = await startLookAlikeVendor('webhook', { credentials: { signingSecret: SECRET } });
  }, 60_000);
  afterAll(async () => {
    for (const s of senders) await s.stop();
    await hook.close();
    await closeRedis(redis);
    await h.close();
  });
  beforeEach(() => {
    hook.accepted.length = 0;
    hook.requests.length = 0;
  });

  async function planWithAlert(tenant: Tenant, windowMinutes: number, url = hook.url): Promise<string> {
    const created = await h
      .as(tenant.key)
      .post('/api/v1/tracking-plans')
      .send({ name: `plan ${randomUUID()}` });
    expect(created.status).toBe(201);
    const planId = (created.body.data as { id: string }).id;
    const put = await h
      .as(tenant.key)
      .put(`/api/v1/tracking-plans/${planId}/alert`)
      .send({ url, windowMinutes, enabled: true, signingSecret: SECRET });
    expect(put.status).toBe(200);
    // The API starts an alert at the real clock's window; the senders here run on the test's.
    await h.db.dataSource.query('UPDATE tracking_plan_alerts SET last_window_end = $2 WHERE plan_id = $1', [
      planId,
      new Date(windowStartOf(clock, windowMinutes)),
    ]);
    return planId;
  }

  const key = (planId: string, overrides: Partial<ViolationKey> = {}): ViolationKey => ({
    planId,
    version: 1,
    writeKeyId: 'wk-1',
    eventType: 'track',
    eventName: 'Order Completed',
    code: 'missing_required',
    path: '/properties/order_id',
    ...overrides,
  });

  /** Counts as ingestion does, at the test's clock, and waits until Redis holds them. */
  async function violate(accountId: string, entries: { key: ViolationKey; count: number }[]) {
    const l = ledger();
    for (const entry of entries)
      l.record(accountId, [
        {
          ...entry,
          sample: () => ({
            messageId: `m-${entry.key.path}`,
            receivedAt: new Date(clock).toISOString(),
            message: 'must have required property',
            payload: { event: entry.key.eventName },
          }),
        },
      ]);
    const total = entries.reduce((sum, e) => sum + e.count, 0);
    await waitUntil('counts recorded', async () => l.stats.recorded === total, 5_000);
  }

  const alerts = () => hook.accepted.map((a) => a.item as unknown as ViolationGeneratedEvent);

  it('sends 1,000 identical violations of a window as one alert with count 1000, then one for the next window', async () => {
    const tenant = await h.tenant();
    clock = Date.UTC(2026, 10, 30, 10, 0, 0);
    const planId = await planWithAlert(tenant, 5);
    // 1,000 violations over three minutes of the 10:00-10:05 window, across two versions and keys.
    clock += 30_000;
    await violate(tenant.accountId, [{ key: key(planId), count: 400 }]);
    clock += 2 * MINUTE;
    await violate(tenant.accountId, [{ key: key(planId, { version: 2 }), count: 300 }]);
    clock += MINUTE;
    await violate(tenant.accountId, [{ key: key(planId, { writeKeyId: 'wk-2', version: 2 }), count: 300 }]);
    const s = sender();
    // 10:05:10: the window ended, its grace (30 s) has not: nothing yet.
    clock = Date.UTC(2026, 10, 30, 10, 5, 10);
    await run(s);
    expect(hook.requests).toHaveLength(0);
    clock = Date.UTC(2026, 10, 30, 10, 5, 31);
    await run(s);
    await run(s);
    expect(alerts()).toHaveLength(1);
    const [alert] = alerts();
    expect(alert).toMatchObject({
      type: 'track',
      event: 'Violation Generated',
      timestamp: '2026-11-30T10:05:00.000Z',
      properties: {
        planId,
        eventType: 'track',
        eventName: 'Order Completed',
        violationCode: 'missing_required',
        path: '/properties/order_id',
        count: 1000,
        windowStart: '2026-11-30T10:00:00.000Z',
        windowEnd: '2026-11-30T10:05:00.000Z',
        versions: [1, 2],
        writeKeyIds: ['wk-1', 'wk-2'],
        omittedKeys: 0,
        omittedCount: 0,
      },
    });
    expect(alert!.properties.sample?.message).toBe('must have required property');
    expect(alert!.messageId).toMatch(/^[0-9a-f]{32}$/);

    // The next window: 7 violations at 10:07, one more alert.
    clock = Date.UTC(2026, 10, 30, 10, 7, 0);
    await violate(tenant.accountId, [{ key: key(planId), count: 7 }]);
    clock = Date.UTC(2026, 10, 30, 10, 10, 31);
    await run(s);
    await run(s);
    expect(alerts().map((a) => [a.properties.windowStart, a.properties.count])).toEqual([
      ['2026-11-30T10:00:00.000Z', 1000],
      ['2026-11-30T10:05:00.000Z', 7],
    ]);
    expect(alerts()[1]!.messageId).not.toBe(alert!.messageId);

    // An empty window sends nothing and is passed.
    clock = Date.UTC(2026, 10, 30, 10, 15, 31);
    await run(s);
    expect(hook.requests).toHaveLength(2);
    const status = await h.as(tenant.key).get(`/api/v1/tracking-plans/${planId}/alert`);
    expect(status.status).toBe(200);
    expect(status.body.data).toMatchObject({
      planId,
      url: hook.url,
      windowMinutes: 5,
      enabled: true,
      signingSecretSet: true,
      status: {
        lastWindowEnd: '2026-11-30T10:15:00.000Z',
        lastSentWindowEnd: '2026-11-30T10:10:00.000Z',
        lastError: null,
        windowsSent: 2,
        alertsSent: 2,
        windowsDropped: 0,
      },
    });
    expect(JSON.stringify(status.body)).not.toContain(SECRET);
  });

  it('sends one alert per key and window from two senders running at once', async () => {
    const tenant = await h.tenant();
    clock = Date.UTC(2026, 10, 30, 11, 0, 0);
    const planId = await planWithAlert(tenant, 1);
    clock += 10_000;
    await violate(tenant.accountId, [
      { key: key(planId), count: 5 },
      { key: key(planId, { code: 'type_mismatch', path: '/properties/subtotal' }), count: 2 },
    ]);
    clock = Date.UTC(2026, 10, 30, 11, 1, 31);
    const [a, b] = [sender(), sender()];
    await Promise.all([run(a), run(b), run(a), run(b)]);
    expect(alerts().map((x) => [x.properties.violationCode, x.properties.count])).toEqual([
      ['missing_required', 5],
      ['type_mismatch', 2],
    ]);
    expect(hook.requests).toHaveLength(1);
  });

  it('retries a 500 and delivers the window once', async () => {
    const tenant = await h.tenant();
    clock = Date.UTC(2026, 10, 30, 12, 0, 0);
    const planId = await planWithAlert(tenant, 1);
    clock += 5_000;
    await violate(tenant.accountId, [{ key: key(planId), count: 3 }]);
    clock = Date.UTC(2026, 10, 30, 12, 1, 31);
    hook.failNext({ status: 500 }, 1);
    await run(sender());
    expect(hook.requests.map((r) => r.status)).toEqual([500, 200]);
    expect(alerts().map((x) => x.properties.count)).toEqual([3]);
  });

  it('records repeated failures, then gives the window up and sends the next', async () => {
    const tenant = await h.tenant();
    clock = Date.UTC(2026, 10, 30, 13, 0, 0);
    const planId = await planWithAlert(tenant, 1);
    clock += 5_000;
    await violate(tenant.accountId, [{ key: key(planId), count: 4 }]);
    clock += MINUTE;
    await violate(tenant.accountId, [{ key: key(planId), count: 6 }]);
    const s = sender({ attemptsPerClaim: 1, maxFailures: 2 });
    hook.failNext({ status: 503 }, 2);
    clock = Date.UTC(2026, 10, 30, 13, 1, 31);
    await run(s);
    const failed = await h.as(tenant.key).get(`/api/v1/tracking-plans/${planId}/alert`);
    expect(failed.body.data.status).toMatchObject({
      lastError: 'http_503',
      failures: 1,
      lastWindowEnd: '2026-11-30T13:00:00.000Z',
    });
    // Not before its backoff; then the second failure gives 13:00-13:01 up and 13:01-13:02 is sent.
    await run(s);
    expect(hook.requests).toHaveLength(1);
    clock = Date.UTC(2026, 10, 30, 13, 2, 31) + 10 * MINUTE;
    await run(s);
    await run(s);
    expect(hook.requests.map((r) => r.status)).toEqual([503, 503, 200]);
    expect(alerts().map((x) => [x.properties.windowStart, x.properties.count])).toEqual([
      ['2026-11-30T13:01:00.000Z', 6],
    ]);
    const after = await h.as(tenant.key).get(`/api/v1/tracking-plans/${planId}/alert`);
    expect(after.body.data.status).toMatchObject({ windowsDropped: 1, windowsSent: 1, lastError: null });
  });

  it('records a failure of our own side without giving the window up', async () => {
    const tenant = await h.tenant();
    clock = Date.UTC(2026, 10, 30, 16, 0, 0);
    const planId = await planWithAlert(tenant, 1);
    clock += 5_000;
    await violate(tenant.accountId, [{ key: key(planId), count: 2 }]);
    // A secret the keys cannot open (another row's ciphertext): nothing can be signed.
    await h.db.dataSource.query(
      "UPDATE tracking_plan_alerts SET secret_ciphertext = 'AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' WHERE plan_id = $1",
      [planId],
    );
    clock = Date.UTC(2026, 10, 30, 16, 1, 31);
    await run(sender());
    expect(hook.requests).toHaveLength(0);
    const status = await h.as(tenant.key).get(`/api/v1/tracking-plans/${planId}/alert`);
    expect(status.body.data.status).toMatchObject({
      lastError: 'unavailable: the violation counts or the alert could not be read',
      lastWindowEnd: '2026-11-30T16:00:00.000Z',
      failures: 0,
      windowsDropped: 0,
      nextAttemptAt: '2026-11-30T16:02:01.000Z',
    });
  });

  it("does not delay one account's alert behind another's hanging webhook", async () => {
    const slow = await startLookAlikeVendor('webhook', { credentials: { signingSecret: SECRET } });
    try {
      const [ta, tb] = [await h.tenant(), await h.tenant()];
      clock = Date.UTC(2026, 10, 30, 14, 0, 0);
      const planA = await planWithAlert(ta, 1, slow.url);
      const planB = await planWithAlert(tb, 1);
      // The earlier tests' alerts are not this test's business: only A and B are due.
      await h.db.dataSource.query(
        'UPDATE tracking_plan_alerts SET enabled = false WHERE plan_id <> ALL($1)',
        [[planA, planB]],
      );
      clock += 5_000;
      await violate(ta.accountId, [{ key: key(planA), count: 1 }]);
      await violate(tb.accountId, [{ key: key(planB), count: 2 }]);
      slow.delayNext(20_000, 1);
      clock = Date.UTC(2026, 10, 30, 14, 1, 31);
      const s = sender({ timeoutMs: 10_000 });
      const started = Date.now();
      await s.tick();
      await waitUntil('the other account’s alert', async () => hook.accepted.length === 1, 5_000);
      expect(Date.now() - started).toBeLessThan(5_000);
      // A's POST is still unanswered: its window is not done.
      const a = await h.as(ta.key).get(`/api/v1/tracking-plans/${planA}/alert`);
      expect(a.body.data.status).toMatchObject({ lastWindowEnd: '2026-11-30T14:00:00.000Z', windowsSent: 0 });
      expect(alerts()[0]!.properties.planId).toBe(planB);
      await s.stop();
    } finally {
      await slow.close();
    }
  }, 60_000);

  it('refuses bad config with its documented 4xx and stores nothing', async () => {
    const tenant = await h.tenant();
    const created = await h.as(tenant.key).post('/api/v1/tracking-plans').send({ name: 'bad config' });
    const path = `/api/v1/tracking-plans/${(created.body.data as { id: string }).id}/alert`;
    const good = { url: hook.url, windowMinutes: 5, enabled: true, signingSecret: SECRET };
    const cases: [Record<string, unknown>, number, string][] = [
      [{ ...good, windowMinutes: 7 }, 400, 'validation_failed'],
      [{ ...good, signingSecret: undefined }, 400, 'validation_failed'],
      [{ ...good, signingSecret: 'short' }, 400, 'validation_failed'],
      [{ ...good, url: 'http://10.1.2.3/hook' }, 422, 'url_not_allowed'],
      [{ ...good, url: 'http://169.254.169.254/latest' }, 422, 'url_not_allowed'],
      [{ ...good, url: 'ftp://hooks.example.com/x' }, 422, 'url_not_allowed'],
      [{ ...good, url: 'https://user:pw@hooks.example.com/x' }, 422, 'url_not_allowed'],
      [{ ...good, url: 'not a url' }, 422, 'url_not_allowed'],
    ];
    for (const [body, status, code] of cases) {
      const answer = await h.as(tenant.key).put(path).send(body);
      expect([answer.status, answer.body.code]).toEqual([status, code]);
    }
    expect((await h.as(tenant.key).get(path)).status).toBe(404);
    const [{ n }] = (await h.db.dataSource.query(
      'SELECT count(*)::int AS n FROM tracking_plan_alerts WHERE account_id = $1',
      [tenant.accountId],
    )) as [{ n: number }];
    expect(n).toBe(0);
    // A stored alert moved to another origin needs its secret again.
    expect((await h.as(tenant.key).put(path).send(good)).status).toBe(200);
    const moved = await h
      .as(tenant.key)
      .put(path)
      .send({ url: 'http://127.0.0.2:1/other', windowMinutes: 5, enabled: true });
    expect([moved.status, moved.body.code]).toEqual([422, 'secret_required_for_new_host']);
  });

  it("answers another account's plan with 404 and keeps to the scopes", async () => {
    const [owner, other] = [await h.tenant(), await h.tenant()];
    clock = Date.UTC(2026, 10, 30, 15, 0, 0);
    const planId = await planWithAlert(owner, 5);
    const path = `/api/v1/tracking-plans/${planId}/alert`;
    const body = { url: hook.url, windowMinutes: 5, enabled: false, signingSecret: SECRET };
    expect((await h.as(other.key).get(path)).status).toBe(404);
    expect((await h.as(other.key).put(path).send(body)).status).toBe(404);
    expect((await h.as(other.key).delete(path)).status).toBe(404);
    expect((await h.as(owner.key).get(`/api/v1/tracking-plans/${randomUUID()}/alert`)).status).toBe(404);
    const reader = await owner.keyWith(['tracking_plans.read']);
    expect((await h.as(reader).get(path)).status).toBe(200);
    expect((await h.as(reader).put(path).send(body)).status).toBe(403);
    expect((await h.as(reader).delete(path)).status).toBe(403);
    expect((await h.as(owner.key).get(path)).body.data.enabled).toBe(true);
    expect((await h.as(owner.key).delete(path)).status).toBe(204);
    expect((await h.as(owner.key).get(path)).status).toBe(404);
  });
});
