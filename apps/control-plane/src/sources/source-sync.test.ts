import { PassThrough } from 'node:stream';
import {
  shopifyRecords,
  startShopifyLookAlike,
  startStripeLookAlike,
  recordStripeEvent,
  stripeRecords,
  type SourceLookAlike,
} from '@pipeline/connectors/testing';
import { createLogger } from '@pipeline/logger';
import { warehouseSchemaFor } from '@pipeline/tenancy';
import { CredentialCipher } from '../apps/credential-cipher';
import { JobRunner } from '../jobs/job-runner';
import { Scheduler } from '../jobs/scheduler';
import { startHarness, TEST_CREDENTIAL_KEYS, type Harness, type Tenant } from '../testing/harness';
import { startScratchWarehouse, type ScratchWarehouse } from '../testing/warehouse';
import { dueSources } from './source-schedule';
import { SourceSyncExecutor } from './source-sync-executor';

interface JobBody {
  id: string;
  status: string;
  trigger: string;
  rowsRead: number;
  rowsWritten: number;
  attempts: number;
  error: { code: string; message: string } | null;
  notBefore: string | null;
}

const DAY = 86_400;
const nowSeconds = () => Math.floor(Date.now() / 1000);

// Full syncs against real PostgreSQL (control plane and warehouse) and local servers that
// answer like Stripe and Shopify: pagination, 429 with Retry-After, 5xx, 401.
describe('source sync engine (real PostgreSQL, Stripe and Shopify look-alikes)', () => {
  let h: Harness;
  let warehouse: ScratchWarehouse;
  let stripe: SourceLookAlike;
  let shopify: SourceLookAlike;
  let runner: JobRunner;
  let t: Tenant;
  const logs: string[] = [];

  const logger = () => {
    const stream = new PassThrough();
    stream.on('data', (chunk: Buffer) => logs.push(chunk.toString('utf8')));
    return createLogger({ service: 'sync-test', stream, level: 'debug' });
  };

  function startRunner(overrides: Partial<ConstructorParameters<typeof JobRunner>[0]> = {}): JobRunner {
    const r = new JobRunner({
      dataSource: h.db.dataSource,
      logger: logger(),
      concurrency: 2,
      pollIntervalMs: 25,
      heartbeatIntervalMs: 50,
      staleAfterMs: 5_000,
      maxAttempts: 3,
      retryBaseMs: 100,
      retryMaxMs: 1_000,
      ...overrides,
    }).register(
      new SourceSyncExecutor({
        dataSource: h.db.dataSource,
        warehouse: warehouse.warehouses,
        cipher: new CredentialCipher(TEST_CREDENTIAL_KEYS),
        logger: logger(),
        baseUrls: { stripe: stripe.url, shopify: shopify.url },
        http: { attempts: 2, minDelayMs: 5 },
        flushRows: 100,
      }),
    );
    r.start();
    return r;
  }

  beforeAll(async () => {
    warehouse = await startScratchWarehouse('sync engine warehouse');
    h = await startHarness('sync engine');
    stripe = await startStripeLookAlike();
    shopify = await startShopifyLookAlike({ bucketSize: 4, leakPerSecond: 20 });
    runner = startRunner();
    t = await h.tenant();
  });

  afterAll(async () => {
    await runner.stop();
    await stripe.close();
    await shopify.close();
    await h.close();
    await warehouse.drop();
  });

  async function app(appType: string, credentials: object, config: object = {}): Promise<string> {
    const response = await h
      .as(t.key)
      .post('/api/v1/apps')
      .send({ appType, displayName: `${appType} ${Math.random()}`, credentials, config });
    expect(response.status).toBe(201);
    return (response.body as { data: { id: string } }).data.id;
  }

  async function source(body: object): Promise<{ id: string; job: JobBody | null }> {
    const response = await h.as(t.key).post('/api/v1/sources').send(body);
    expect(response.status).toBe(201);
    const data = (response.body as { data: { id: string; dispatchedJob: JobBody | null } }).data;
    return { id: data.id, job: data.dispatchedJob };
  }

  async function job(id: string): Promise<JobBody> {
    const response = await h.as(t.key).get(`/api/v1/jobs/${id}`);
    expect(response.status).toBe(200);
    return (response.body as { data: JobBody }).data;
  }

  async function finished(id: string, timeoutMs = 15_000): Promise<JobBody> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const current = await job(id);
      if (['succeeded', 'failed', 'cancelled'].includes(current.status)) return current;
      if (Date.now() > deadline) throw new Error(`job ${id} still ${current.status}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  async function detail(id: string) {
    const response = await h.as(t.key).get(`/api/v1/sources/${id}`);
    return (
      response.body as {
        data: {
          integrationStatus: string;
          lastSyncAt: string | null;
          lastError: { code: string; message: string; at: string } | null;
          consecutiveFailures: number;
          latestJobId: string | null;
          activeImportJobId: string | null;
          nextSyncAt: string | null;
          onboardingState: string;
        };
      }
    ).data;
  }

  async function trigger(id: string): Promise<JobBody> {
    const response = await h.as(t.key).post(`/api/v1/sources/${id}/sync`);
    expect(response.status).toBe(202);
    return (response.body as { data: JobBody }).data;
  }

  async function rows(table: string): Promise<Record<string, unknown>[]> {
    const result = await warehouse.query(
      `SELECT * FROM ${warehouseSchemaFor(t.accountId)}.${table} ORDER BY id`,
      [],
    );
    return result.rows as Record<string, unknown>[];
  }

  describe('Stripe', () => {
    let stripeApp: string;
    let sourceId: string;
    const start = nowSeconds() - 60 * DAY;

    beforeAll(async () => {
      stripeApp = await app('stripe', { secretKey: stripe.secret });
      // 40 customers from long ago, 10 three days old; 20 charges; 5 customers before the start date.
      stripe.data.set('customers', [
        ...stripeRecords('customers', 5, start - DAY, 900),
        ...stripeRecords('customers', 40, nowSeconds() - 30 * DAY, 0),
        ...stripeRecords('customers', 10, nowSeconds() - 3 * DAY, 40),
      ]);
      stripe.data.set('charges', stripeRecords('charges', 250, nowSeconds() - 2 * DAY));
    });

    it('backfills the chosen streams from historicalSyncStartDate, page by page, and records the job on the source', async () => {
      const beforeCreate = Date.now();
      const created = await source({
        appId: stripeApp,
        syncType: 'stripe',
        importTasks: ['customers', 'charges'],
        historicalSyncStartDate: new Date(start * 1000).toISOString(),
        rollingPeriodHours: 24,
        runNow: true,
      });
      sourceId = created.id;
      expect(created.job).toMatchObject({ status: 'queued', trigger: 'onboarding' });
      const done = await finished(created.job!.id);
      expect(done).toMatchObject({
        status: 'succeeded',
        rowsRead: 300,
        rowsWritten: 300,
        attempts: 1,
        error: null,
      });

      const customers = await rows('stripe_customers');
      expect(customers).toHaveLength(50);
      expect(customers.some((c) => String(c.id).startsWith('cus_000009'))).toBe(false);
      expect(customers[0]).toMatchObject({ id: 'cus_00000000', email: 'customer0@example.com' });
      expect(await rows('stripe_charges')).toHaveLength(250);
      // 250 charges are three pages of at most 100.
      expect(stripe.requests.filter((r) => r.path.startsWith('/v1/charges')).length).toBe(3);

      const readAt = Date.now();
      const after = await detail(sourceId);
      expect(after).toMatchObject({
        integrationStatus: 'succeeded',
        lastError: null,
        consecutiveFailures: 0,
        latestJobId: done.id,
        activeImportJobId: null,
        onboardingState: 'completed',
      });
      // This sync's time: after the source was created, before its detail was read.
      expect(Date.parse(after.lastSyncAt!)).toBeGreaterThanOrEqual(beforeCreate);
      expect(Date.parse(after.lastSyncAt!)).toBeLessThanOrEqual(readAt);
      expect(Date.parse(after.nextSyncAt!)).toBeGreaterThan(Date.now());
    });

    it('syncs incrementally from Stripe events: what changed since the cursor, old objects updated too, without duplicates', async () => {
      stripe.requests.length = 0;
      const t = nowSeconds();
      for (const created of stripeRecords('customers', 25, t, 100))
        recordStripeEvent(stripe, 'customers', 'customer.created', created, t);
      const old = stripe.data.get('customers')!.find((c) => c.id === 'cus_00000003')!; // 30 days old
      recordStripeEvent(
        stripe,
        'customers',
        'customer.updated',
        { ...old, email: 'renamed3@example.com' },
        t,
      );
      const charge = stripe.data.get('charges')![7]!;
      recordStripeEvent(stripe, 'charges', 'charge.refunded', { ...charge, status: 'refunded' }, t);
      const done = await finished((await trigger(sourceId)).id);
      expect(done.status).toBe('succeeded');
      // Events after the cursor the backfill saved: when its listing began, less a minute.
      const customerRead = stripe.requests.find((r) =>
        decodeURIComponent(r.path).includes('types[]=customer.created'),
      )!;
      const gt = Number(new URL(customerRead.path, stripe.url).searchParams.get('created[gt]'));
      expect(Math.abs(gt - (nowSeconds() - 60))).toBeLessThan(120);
      // No object list but the credentials check.
      expect(stripe.requests.filter((r) => r.path.startsWith('/v1/customers')).map((r) => r.path)).toEqual([
        '/v1/customers?limit=1',
      ]);
      expect(done.rowsRead).toBe(25 + 1 + 1);
      const customers = await rows('stripe_customers');
      expect(customers).toHaveLength(75);
      expect(customers.find((c) => c.id === 'cus_00000003')).toMatchObject({ email: 'renamed3@example.com' });
      const charges = await rows('stripe_charges');
      expect(charges).toHaveLength(250);
      expect(charges.filter((c) => c.status === 'refunded').map((c) => c.id)).toEqual([charge.id]);
    });

    it('answers 409 to a second trigger while a sync is queued or running', async () => {
      const [a, b] = await Promise.all([
        h.as(t.key).post(`/api/v1/sources/${sourceId}/sync`),
        h.as(t.key).post(`/api/v1/sources/${sourceId}/sync`),
      ]);
      expect([a.status, b.status].sort()).toEqual([202, 409]);
      const loser = a.status === 409 ? a : b;
      expect(loser.body).toMatchObject({ code: 'sync_already_active' });
      const winner = (a.status === 202 ? a : b).body as { data: JobBody };
      expect((await finished(winner.data.id)).status).toBe('succeeded');
    });

    it('fails on bad credentials with lastError and consecutiveFailures, keeps counting, then recovers', async () => {
      const badApp = await app('stripe', { secretKey: 'sk_test_wrong' });
      // Subscriptions (none at the vendor): this source's rows stay out of the other tests' tables.
      const bad = await source({
        appId: badApp,
        syncType: 'stripe',
        importTasks: ['subscriptions'],
        runNow: true,
      });
      const first = await finished(bad.job!.id);
      // The tenant sees the status; the vendor's own words stay in the logs.
      expect(first).toMatchObject({
        status: 'failed',
        attempts: 1,
        error: { code: 'invalid_credentials', message: 'stripe answered 401' },
      });
      let state = await detail(bad.id);
      expect(state).toMatchObject({
        integrationStatus: 'failed',
        consecutiveFailures: 1,
        activeImportJobId: null,
        lastError: { code: 'invalid_credentials', message: 'stripe answered 401' },
        onboardingState: 'first_sync_failed',
      });
      expect(logs.join('')).toContain('Invalid API Key provided');
      expect(JSON.stringify(state)).not.toContain('sk_test_wrong');

      expect((await finished((await trigger(bad.id)).id)).status).toBe('failed');
      expect((await detail(bad.id)).consecutiveFailures).toBe(2);

      const fixed = await h
        .as(t.key)
        .patch(`/api/v1/apps/${badApp}`)
        .send({ credentials: { secretKey: stripe.secret } });
      expect(fixed.status).toBe(200);
      const recovered = await finished((await trigger(bad.id)).id);
      expect(recovered.status).toBe('succeeded');
      state = await detail(bad.id);
      expect(state).toMatchObject({
        integrationStatus: 'succeeded',
        consecutiveFailures: 0,
        lastError: null,
      });
      expect(logs.join('')).not.toContain('sk_test_wrong');
      expect(logs.join('')).not.toContain(stripe.secret);
    });

    it("rides out a 429 with Retry-After and a single 500 mid-stream within the client's own retries", async () => {
      stripe.requests.length = 0;
      // 150 charges updated: two pages of charge events, newest first on the way to the oldest.
      const t = nowSeconds();
      for (const charge of stripe.data.get('charges')!.slice(0, 150))
        recordStripeEvent(stripe, 'charges', 'charge.updated', { ...charge, metadata: { order: 'o-1' } }, t);
      // The customers' last second of events is read again (the cursor stays one second short of it).
      const [state] = (await h.db.dataSource.query(
        "SELECT cursor FROM source_stream_states WHERE source_id = $1 AND stream = 'customers'",
        [sourceId],
      )) as { cursor: string }[];
      const again = stripe.data
        .get('events')!
        .filter(
          (e) => String(e.type).startsWith('customer.') && Number(e.created) > Number(state!.cursor),
        ).length;
      stripe.failNext(429, 1, '0.2');
      stripe.failAfter(3, 500);
      const done = await finished((await trigger(sourceId)).id);
      // check; customers' events; charges' walk (page 1, then the 500 and its retry) and the newer page.
      expect(done).toMatchObject({ status: 'succeeded', attempts: 1, rowsRead: again + 150 });
      expect(stripe.requests.map((r) => r.status)).toEqual([429, 200, 200, 200, 500, 200, 200]);
      const charges = await rows('stripe_charges');
      expect(charges.filter((c) => JSON.stringify(c.metadata) === '{"order":"o-1"}')).toHaveLength(150);
    });

    it("retries a sync whose 500s mid-stream outlast the client's retries after a backoff, without duplicates", async () => {
      // check, customers' events, charges' events page 1 succeed; both attempts at page 2 fail.
      const t = nowSeconds();
      for (const charge of stripe.data.get('charges')!.slice(0, 150))
        recordStripeEvent(stripe, 'charges', 'charge.updated', { ...charge, metadata: { order: 'o-2' } }, t);
      stripe.failAfter(3, 500, 2);
      const queued = await trigger(sourceId);
      let retrying: JobBody | undefined;
      const deadline = Date.now() + 10_000;
      while (!retrying && Date.now() < deadline) {
        const current = await job(queued.id);
        if (current.status === 'queued' && current.attempts === 1 && current.notBefore) retrying = current;
        else if (current.status !== 'queued' && current.status !== 'running') break;
        await new Promise((r) => setTimeout(r, 10));
      }
      expect(retrying).toMatchObject({ error: { code: 'vendor_unavailable' } });
      // The retry starts once its backoff is over, which can fall between the reads. A job still
      // waiting after the source was read was waiting before: the source must show queued then;
      // once the job has started, the source showed queued or, if it started first, syncing.
      const shown = (await detail(sourceId)).integrationStatus;
      const after = await job(queued.id);
      if (after.status === 'queued' && after.attempts === 1) expect(shown).toBe('queued');
      else expect(['queued', 'syncing']).toContain(shown);
      const done = await finished(queued.id);
      expect(done).toMatchObject({ status: 'succeeded', attempts: 2 });
      // Compute counts both attempts: more than the last one's start to end.
      const [spent] = (await h.db.dataSource.query(
        'SELECT compute_ms, extract(epoch FROM finished_at - started_at) * 1000 AS last FROM jobs WHERE id = $1',
        [queued.id],
      )) as { compute_ms: string; last: string }[];
      expect(Number(spent!.compute_ms)).toBeGreaterThan(Number(spent!.last));
      expect(await rows('stripe_customers')).toHaveLength(75);
      const charges = await rows('stripe_charges');
      expect(charges.filter((c) => JSON.stringify(c.metadata) === '{"order":"o-2"}')).toHaveLength(150);
      expect((await detail(sourceId)).consecutiveFailures).toBe(0);
    });

    it('fails a sync whose 500s outlast every attempt, counting one failure', async () => {
      stripe.failNext(500, 100);
      const done = await finished((await trigger(sourceId)).id);
      stripe.clearFailures();
      expect(done).toMatchObject({ status: 'failed', attempts: 3, error: { code: 'vendor_unavailable' } });
      expect(await detail(sourceId)).toMatchObject({
        integrationStatus: 'failed',
        consecutiveFailures: 1,
        lastError: { code: 'vendor_unavailable' },
      });
      expect((await finished((await trigger(sourceId)).id)).status).toBe('succeeded');
    });
  });

  describe('Shopify', () => {
    it('imports orders, customers and products through Link-header pages, pacing on the call limit and waiting out a 429', async () => {
      const shopifyApp = await app('shopify', { accessToken: shopify.secret }, { shop: 'look-alike' });
      const old = new Date(Date.now() - 20 * DAY * 1000);
      const recent = new Date(Date.now() - 3 * DAY * 1000);
      // Most records 20 days old, the newest of each stream 3 days old: the cursor.
      shopify.data.set('orders', [
        ...shopifyRecords('orders', 590, old),
        ...shopifyRecords('orders', 10, recent, 591),
      ]);
      shopify.data.set('customers', [
        ...shopifyRecords('customers', 290, old),
        ...shopifyRecords('customers', 10, recent, 291),
      ]);
      shopify.data.set('products', [
        ...shopifyRecords('products', 15, old),
        ...shopifyRecords('products', 5, recent, 16),
      ]);
      shopify.failNext(429, 1, '0.2');
      const created = await source({
        appId: shopifyApp,
        syncType: 'shopify',
        rollingPeriodHours: 24,
        runNow: true,
      });
      const done = await finished(created.job!.id, 30_000);
      expect(done).toMatchObject({ status: 'succeeded', rowsRead: 920, rowsWritten: 920 });
      expect(await rows('shopify_orders')).toHaveLength(600);
      expect(await rows('shopify_customers')).toHaveLength(300);
      expect(shopify.requests.some((r) => r.status === 429)).toBe(true);

      // Read again from a day before each cursor: the records of 3 days ago, 5 old orders
      // updated now and 3 new ones; not the 20-day-old rest.
      const orders = shopify.data.get('orders')!;
      for (const order of orders.slice(0, 5)) order.updated_at = new Date().toISOString();
      orders.push(...shopifyRecords('orders', 3, new Date(), 10_000));
      const second = await finished((await trigger(created.id)).id, 30_000);
      expect(second).toMatchObject({ status: 'succeeded', rowsRead: 10 + 5 + 3 + 10 + 5 });
      expect(await rows('shopify_orders')).toHaveLength(603);
    });
  });

  describe('scheduling', () => {
    let sourceId: string;
    let scheduler: Scheduler;

    beforeAll(async () => {
      scheduler = new Scheduler({
        dataSource: h.db.dataSource,
        logger: logger(),
        intervalMs: 60_000,
      }).register('sources', dueSources(h.services.jobs));
      const stripeApp = await app('stripe', { secretKey: stripe.secret });
      sourceId = (
        await source({
          appId: stripeApp,
          syncType: 'stripe',
          importTasks: ['invoices'],
          syncFrequencyValue: 6,
          syncFrequencyUnit: 'hours',
          syncAnchorTime: '01:30',
          syncAnchorTimezone: 'Europe/Berlin',
        })
      ).id;
    });

    const setNext = (at: Date) =>
      h.db.dataSource.query('UPDATE sources SET next_sync_at = $2 WHERE id = $1', [sourceId, at]);
    const jobsOf = async () =>
      (
        (await h.as(t.key).get(`/api/v1/sources/${sourceId}/jobs`)).body as {
          data: JobBody[];
        }
      ).data;

    it('schedules a new source at its next anchored slot', async () => {
      const next = new Date((await detail(sourceId)).nextSyncAt!);
      expect(next.getTime()).toBeGreaterThan(Date.now());
      expect(next.getTime() - Date.now()).toBeLessThanOrEqual(6 * 3600_000);
      // 01:30 in Berlin, every 6 hours: the slot's minute is :30 in any offset of the zone.
      expect(next.getUTCMinutes()).toBe(30);
      expect(await scheduler.tick()).toBe(0);
    });

    it('queues a due source once, moves its slot on, and skips a slot while a sync is active', async () => {
      await setNext(new Date(Date.now() - 1000));
      expect(await scheduler.tick()).toBe(1);
      const [scheduled] = await jobsOf();
      expect(scheduled).toMatchObject({ trigger: 'schedule' });
      expect(Date.parse((await detail(sourceId)).nextSyncAt!)).toBeGreaterThan(Date.now());
      expect(await scheduler.tick()).toBe(0);
      expect((await finished(scheduled!.id)).status).toBe('succeeded');
    });

    it('does not schedule a paused source, cancels its queued sync, and schedules it again on resume', async () => {
      await runner.stop();
      try {
        const queued = await trigger(sourceId);
        const paused = await h.as(t.key).patch(`/api/v1/sources/${sourceId}`).send({ isActive: false });
        expect(paused.status).toBe(200);
        expect(paused.body.data).toMatchObject({
          integrationStatus: 'paused',
          nextSyncAt: null,
          activeImportJobId: null,
        });
        expect(await job(queued.id)).toMatchObject({ status: 'cancelled', error: { code: 'cancelled' } });
        await setNext(new Date(Date.now() - 1000));
        expect(await scheduler.tick()).toBe(0);

        const resumed = await h.as(t.key).patch(`/api/v1/sources/${sourceId}`).send({ isActive: true });
        expect(resumed.body.data).toMatchObject({ integrationStatus: 'pending' });
        expect(Date.parse(resumed.body.data.nextSyncAt)).toBeGreaterThan(Date.now());
      } finally {
        runner = startRunner();
      }
    });

    it('does not schedule a deleted source', async () => {
      expect((await h.as(t.key).delete(`/api/v1/sources/${sourceId}`)).status).toBe(200);
      await h.db.dataSource.query('UPDATE sources SET next_sync_at = $2 WHERE id = $1', [
        sourceId,
        new Date(0),
      ]);
      const before = (await jobsOf()).length;
      expect(await scheduler.tick()).toBe(0);
      expect(await jobsOf()).toHaveLength(before);
    });
  });
});
