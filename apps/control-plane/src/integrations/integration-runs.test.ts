import { AppEntity } from '../apps/app.entity';
import { PassThrough } from 'node:stream';
import { startStripeLookAlike, stripeRecords, type SourceLookAlike } from '@pipeline/connectors/testing';
import {
  lookAlikeCredentials,
  startLookAlikeVendor,
  type LookAlikeServer,
} from '@pipeline/destinations/testing';
import { createLogger } from '@pipeline/logger';
import { CredentialCipher } from '../apps/credential-cipher';
import { JobRunner } from '../jobs/job-runner';
import { Scheduler } from '../jobs/scheduler';
import { SourceSyncExecutor } from '../sources/source-sync-executor';
import { dueSources } from '../sources/source-schedule';
import { startHarness, TEST_CREDENTIAL_KEYS, type Harness, type Tenant } from '../testing/harness';
import { startScratchWarehouse, trackRow, userRow, type ScratchWarehouse } from '../testing/warehouse';
import { IntegrationRunExecutor } from './integration-run-executor';
import { dueIntegrations } from './integration-schedule';

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

interface IntegrationBody {
  id: string;
  status: string;
  isActive: boolean;
  lastSyncAt: string | null;
  lastError: { code: string; message: string } | null;
  consecutiveFailures: number;
  latestJobId: string | null;
  importDependencyStatus: string;
  triggeredImportJobIds: string[];
  nextRunAt: string | null;
}

const DAY_MS = 86_400_000;

// Integration runs end to end: real PostgreSQL (control plane and warehouse), the real job
// runner and scheduler, the real destination clients against local servers that answer like
// Braze and Amplitude, and a Stripe look-alike for the source import an integration needs.
describe('integration runs (real PostgreSQL, Braze, Amplitude and Stripe look-alikes)', () => {
  let h: Harness;
  let warehouse: ScratchWarehouse;
  let braze: LookAlikeServer;
  let amplitude: LookAlikeServer;
  let stripe: SourceLookAlike;
  let runner: JobRunner;
  let scheduler: Scheduler;
  let t: Tenant;
  const logs: string[] = [];

  const logger = () => {
    const stream = new PassThrough();
    stream.on('data', (chunk: Buffer) => logs.push(chunk.toString('utf8')));
    return createLogger({ service: 'integration-runs-test', stream, level: 'debug' });
  };

  beforeAll(async () => {
    warehouse = await startScratchWarehouse('integration runs warehouse');
    h = await startHarness('integration runs');
    braze = await startLookAlikeVendor('braze');
    amplitude = await startLookAlikeVendor('amplitude');
    stripe = await startStripeLookAlike();
    const cipher = new CredentialCipher(TEST_CREDENTIAL_KEYS);
    runner = new JobRunner({
      dataSource: h.db.dataSource,
      logger: logger(),
      concurrency: 2,
      pollIntervalMs: 25,
      heartbeatIntervalMs: 50,
      staleAfterMs: 5_000,
      maxAttempts: 2,
      retryBaseMs: 50,
      retryMaxMs: 100,
    })
      .register(
        new SourceSyncExecutor({
          dataSource: h.db.dataSource,
          warehouse: warehouse.warehouses,
          cipher,
          logger: logger(),
          baseUrls: { stripe: stripe.url },
          http: { attempts: 1 },
        }),
      )
      .register(
        new IntegrationRunExecutor({
          regulationOf: (accountId) => h.services.regulations.service.regulationOf(accountId),
          dataSource: h.db.dataSource,
          warehouse: warehouse.warehouses,
          cipher,
          jobs: h.services.jobs,
          logger: logger(),
          baseUrls: { braze: braze.url, amplitude: amplitude.url },
          dependencyRetryMs: 200,
          batchRows: 2,
        }),
      );
    runner.start();
    scheduler = new Scheduler({ dataSource: h.db.dataSource, logger: logger(), intervalMs: 60_000 })
      .register('sources', dueSources(h.services.jobs))
      .register('integrations', dueIntegrations(h.services.jobs));
    t = await h.tenant();
  });

  afterAll(async () => {
    await runner.stop();
    await braze.close();
    await amplitude.close();
    await stripe.close();
    await h.close();
    await warehouse.drop();
  });

  async function app(appType: string, credentials: object | undefined, config: object = {}): Promise<string> {
    const response = await h
      .as(t.key)
      .post('/api/v1/apps')
      .send({
        appType,
        displayName: `${appType} ${Math.random()}`,
        ...(credentials ? { credentials } : {}),
        config,
      });
    expect(response.status).toBe(201);
    return (response.body as { data: { id: string } }).data.id;
  }

  const brazeApp = () =>
    app('braze', lookAlikeCredentials.braze, { restEndpoint: 'https://rest.iad-01.braze.com' });

  async function integration(body: object): Promise<IntegrationBody> {
    const response = await h
      .as(t.key)
      .post('/api/v1/integrations')
      .send({
        dataType: 'users',
        schedule: { frequencyValue: 1, frequencyUnit: 'days', rollingWindowDays: 7 },
        ...body,
      });
    expect(response.status).toBe(201);
    return (response.body as { data: IntegrationBody }).data;
  }

  const detail = async (id: string) =>
    ((await h.as(t.key).get(`/api/v1/integrations/${id}`)).body as { data: IntegrationBody }).data;
  const job = async (id: string) =>
    ((await h.as(t.key).get(`/api/v1/jobs/${id}`)).body as { data: JobBody }).data;

  async function finished(id: string, timeoutMs = 15_000): Promise<JobBody> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const current = await job(id);
      if (['succeeded', 'failed', 'cancelled'].includes(current.status)) return current;
      if (Date.now() > deadline) throw new Error(`job ${id} still ${current.status}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  async function run(id: string): Promise<JobBody> {
    const response = await h.as(t.key).post(`/api/v1/integrations/${id}/run`);
    expect(response.status).toBe(202);
    return finished((response.body as { data: JobBody }).data.id);
  }

  const brazeAttributes = () => braze.accepted.filter((a) => a.endpoint === 'attributes').map((a) => a.item);

  describe('user_attributes to Braze', () => {
    let id: string;

    it('is due at once, and the scheduled run sends every identified user with the chosen traits', async () => {
      const at = new Date(Date.now() - 60_000);
      await warehouse.seed(t.accountId, [userRow('u1', at), userRow('u2', at), userRow('u3', at)]);
      const created = await integration({
        destinationAppId: await brazeApp(),
        config: { global: {}, tasks: [{ task_type: 'user_attributes', fields: ['plan'] }] },
      });
      id = created.id;
      expect(created).toMatchObject({ status: 'pending', importDependencyStatus: 'not_required' });
      expect(Date.parse(created.nextRunAt!)).toBeLessThanOrEqual(Date.now());

      expect(await scheduler.tick()).toBeGreaterThanOrEqual(1);
      const scheduled = (await detail(id)).latestJobId!;
      const done = await finished(scheduled);
      expect(done).toMatchObject({ status: 'succeeded', trigger: 'schedule', rowsRead: 3, rowsWritten: 3 });
      expect(
        brazeAttributes()
          .map((a) => [a.external_id, a.plan])
          .sort(),
      ).toEqual([
        ['u1', 'pro'],
        ['u2', 'pro'],
        ['u3', 'pro'],
      ]);
      const after = await detail(id);
      expect(after).toMatchObject({
        status: 'completed',
        consecutiveFailures: 0,
        lastError: null,
        latestJobId: scheduled,
      });
      expect(Date.parse(after.nextRunAt!)).toBeGreaterThan(Date.now());
    });

    it('sends only what changed since the last successful run (the watermark)', async () => {
      braze.accepted.length = 0;
      expect(await run(id)).toMatchObject({ status: 'succeeded', rowsRead: 0, rowsWritten: 0 });
      expect(brazeAttributes()).toHaveLength(0);
      // A new user and a changed one (the warehouse upserts users, moving received_at).
      await warehouse.seed(t.accountId, [userRow('u4', new Date()), userRow('u2', new Date())]);
      expect(await run(id)).toMatchObject({ status: 'succeeded', rowsRead: 2, rowsWritten: 2 });
      expect(
        brazeAttributes()
          .map((a) => a.external_id)
          .sort(),
      ).toEqual(['u2', 'u4']);
    });

    it('sends no row of a suppressed subject, nor of a deleted one changed at or before its cut-off', async () => {
      const regulate = async (regulationType: string, subjectIds: string[]) => {
        const res = await h
          .as(t.key)
          .post('/api/v1/regulations')
          .send({ regulationType, subjectType: 'USER_ID', subjectIds })
          .expect(200);
        return (res.body as { data: { regulation: { cutoff: string | null } } }).data.regulation;
      };
      braze.accepted.length = 0;
      const seeded = new Date();
      await warehouse.seed(t.accountId, [
        userRow('u6', seeded),
        userRow('u7', seeded),
        userRow('u8', seeded),
      ]);
      await regulate('SUPPRESS_ONLY', ['u6']);
      const cutoff = Date.parse((await regulate('DELETE_INTERNAL', ['u8'])).cutoff ?? '');
      expect(cutoff).toBeGreaterThanOrEqual(seeded.getTime());
      expect(await run(id)).toMatchObject({ status: 'succeeded', rowsRead: 3, rowsWritten: 1 });
      expect(brazeAttributes().map((a) => a.external_id)).toEqual(['u7']);
      // Changed after the cut-off: DELETE_* keeps what comes later, and it is sent.
      braze.accepted.length = 0;
      await warehouse.seed(t.accountId, [userRow('u8', new Date(Math.max(Date.now(), cutoff + 1)))]);
      expect(await run(id)).toMatchObject({ status: 'succeeded', rowsRead: 1, rowsWritten: 1 });
      expect(brazeAttributes().map((a) => a.external_id)).toEqual(['u8']);
    });

    it('is errored with lastError and consecutiveFailures through a destination outage, and recovers without losing rows', async () => {
      braze.accepted.length = 0;
      await warehouse.seed(t.accountId, [userRow('u5', new Date())]);
      // One request per attempt (one changed user), two attempts: both answered 503.
      braze.failNext({ status: 503 }, 2);
      const failed = await run(id);
      expect(failed).toMatchObject({
        status: 'failed',
        attempts: 2,
        error: { code: 'destination_unavailable' },
      });
      expect(await detail(id)).toMatchObject({
        status: 'errored',
        consecutiveFailures: 1,
        lastError: { code: 'destination_unavailable' },
      });
      const recovered = await run(id);
      expect(recovered).toMatchObject({ status: 'succeeded', rowsWritten: 1 });
      expect(brazeAttributes().map((a) => a.external_id)).toEqual(['u5']);
      expect(await detail(id)).toMatchObject({
        status: 'completed',
        consecutiveFailures: 0,
        lastError: null,
      });
    });

    it('answers 409 to a second trigger while a run is queued or running', async () => {
      const [a, b] = await Promise.all([
        h.as(t.key).post(`/api/v1/integrations/${id}/run`),
        h.as(t.key).post(`/api/v1/integrations/${id}/run`),
      ]);
      expect([a.status, b.status].sort()).toEqual([202, 409]);
      expect((a.status === 409 ? a : b).body).toMatchObject({ code: 'run_already_active' });
      await finished(((a.status === 202 ? a : b).body as { data: JobBody }).data.id);
      const jobs = await h.as(t.key).get(`/api/v1/integrations/${id}/jobs?limit=2`);
      expect(jobs.status).toBe(200);
      expect((jobs.body as { data: JobBody[] }).data).toHaveLength(2);
    });

    it('pauses (nothing scheduled, runs refused) and resumes to pending with a next run', async () => {
      const paused = await h.as(t.key).patch(`/api/v1/integrations/${id}`).send({ isActive: false });
      expect(paused.body.data).toMatchObject({ status: 'paused', isActive: false, nextRunAt: null });
      await h.db.dataSource.query('UPDATE integrations SET next_run_at = $2 WHERE id = $1', [
        id,
        new Date(0),
      ]);
      const before = (await detail(id)).latestJobId;
      await scheduler.tick();
      expect((await detail(id)).latestJobId).toBe(before);
      const refused = await h.as(t.key).post(`/api/v1/integrations/${id}/run`);
      expect(refused.status).toBe(409);
      expect(refused.body).toMatchObject({ code: 'integration_not_active' });

      const resumed = await h.as(t.key).patch(`/api/v1/integrations/${id}`).send({ isActive: true });
      expect(resumed.body.data).toMatchObject({ status: 'pending', isActive: true });
      expect(Date.parse(resumed.body.data.nextRunAt)).toBeGreaterThan(Date.now());
      expect((await run(id)).status).toBe('succeeded');
    });
  });

  describe('recent_events to Amplitude', () => {
    it('sends the events of the rolling window, once', async () => {
      const oldOrder = trackRow({ name: 'old_order', at: new Date(Date.now() - 10 * DAY_MS) });
      const signedUp = trackRow({ name: 'signed_up', at: new Date(Date.now() - DAY_MS) });
      const checkout = trackRow({ name: 'checkout', at: new Date(Date.now() - 60_000) });
      const home = trackRow({ name: 'home', type: 'page', at: new Date(Date.now() - 60_000) });
      await warehouse.seed(t.accountId, [oldOrder, signedUp, checkout, home]);
      const created = await integration({
        dataType: 'events',
        destinationAppId: await app('amplitude', lookAlikeCredentials.amplitude),
        config: { global: {}, tasks: [{ task_type: 'recent_events' }] },
      });
      // Each event the vendor accepted, as its message id and name: a duplicate shows twice.
      const received = (from = 0) =>
        amplitude.accepted
          .slice(from)
          .map((a) => `${String(a.item.insert_id)} ${String(a.item.event_type)}`)
          .sort();
      const first = await run(created.id);
      expect(first).toMatchObject({ status: 'succeeded', rowsRead: 3, rowsWritten: 3 });
      expect(received()).toEqual(
        [
          `${signedUp.row.message_id} signed_up`,
          `${checkout.row.message_id} checkout`,
          `${home.row.message_id} Page Viewed`,
        ].sort(),
      );
      expect(await run(created.id)).toMatchObject({ status: 'succeeded', rowsRead: 0, rowsWritten: 0 });
      expect(amplitude.accepted).toHaveLength(3);
      const refund = trackRow({ name: 'refund', at: new Date() });
      await warehouse.seed(t.accountId, [refund]);
      expect(await run(created.id)).toMatchObject({ status: 'succeeded', rowsRead: 1, rowsWritten: 1 });
      expect(received(3)).toEqual([`${refund.row.message_id} refund`]);
    });
  });

  describe('source_stream: Stripe customers to Braze', () => {
    it('waits for the import it needs (triggering it), then sends the imported customers', async () => {
      stripe.data.set('customers', stripeRecords('customers', 5, Math.floor(Date.now() / 1000)));
      const stripeApp = await app('stripe', { secretKey: stripe.secret });
      const created = await integration({
        sourceAppId: stripeApp,
        destinationAppId: await brazeApp(),
        config: {
          global: {},
          tasks: [{ task_type: 'source_stream', stream: 'customers', userIdField: 'email' }],
        },
      });
      expect(created.importDependencyStatus).toBe('missing_source');
      const queued = await h.as(t.key).post(`/api/v1/integrations/${created.id}/run`);
      expect(queued.status).toBe(202);
      const runId = (queued.body as { data: JobBody }).data.id;
      // No source imports from the app: the run waits instead of failing.
      let waiting: JobBody | undefined;
      for (let i = 0; i < 200 && !waiting; i += 1) {
        const current = await job(runId);
        if (current.status === 'queued' && current.notBefore) waiting = current;
        await new Promise((r) => setTimeout(r, 10));
      }
      expect(waiting).toMatchObject({ status: 'queued', attempts: 0 });
      expect((await detail(created.id)).status).toBe('pending');

      // A source appears without a sync of its own: the waiting run triggers its import.
      const source = await h
        .as(t.key)
        .post('/api/v1/sources')
        .send({ appId: stripeApp, syncType: 'stripe', importTasks: ['customers'] });
      expect(source.status).toBe(201);
      const done = await finished(runId, 20_000);
      expect(done).toMatchObject({ status: 'succeeded', rowsRead: 5, rowsWritten: 5 });
      const after = await detail(created.id);
      expect(after).toMatchObject({ status: 'completed', importDependencyStatus: 'ready' });
      expect(after.triggeredImportJobIds).toHaveLength(1);
      expect(await job(after.triggeredImportJobIds[0]!)).toMatchObject({
        trigger: 'onboarding',
        status: 'succeeded',
      });
      const emails = brazeAttributes()
        .filter((a) => String(a.external_id).includes('@'))
        .map((a) => a.external_id);
      expect(emails.sort()).toEqual(
        stripeRecords('customers', 5, 0)
          .map((c) => c.email)
          .sort(),
      );
    });
  });

  describe('lifecycle and validation', () => {
    it('is a draft while its destination has no credentials, and pending once it has', async () => {
      const bare = await app('braze', undefined, { restEndpoint: 'https://rest.iad-01.braze.com' });
      const created = await integration({
        destinationAppId: bare,
        config: { global: {}, tasks: [{ task_type: 'user_attributes' }] },
      });
      expect(created).toMatchObject({ status: 'draft', nextRunAt: null });
      const refused = await h.as(t.key).post(`/api/v1/integrations/${created.id}/run`);
      expect(refused.status).toBe(409);
      expect(refused.body).toMatchObject({ code: 'integration_draft' });
      const updated = await h
        .as(t.key)
        .patch(`/api/v1/apps/${bare}`)
        .send({ credentials: lookAlikeCredentials.braze });
      expect(updated.status).toBe(200);
      await scheduler.tick();
      const promoted = await detail(created.id);
      expect(['pending', 'running', 'completed']).toContain(promoted.status);
      expect((await finished(promoted.latestJobId!)).status).toBe('succeeded');
    });

    it('takes nothing older than historicalSyncStartDate on its first run', async () => {
      // Every user seeded so far was received before the start date; this one after it.
      const start = new Date();
      await warehouse.seed(t.accountId, [userRow('late-user', new Date(start.getTime() + 1000))]);
      const created = await integration({
        destinationAppId: await brazeApp(),
        historicalSyncStartDate: start.toISOString(),
        config: { global: {}, tasks: [{ task_type: 'user_attributes' }] },
      });
      braze.accepted.length = 0;
      expect(await run(created.id)).toMatchObject({ status: 'succeeded', rowsRead: 1 });
      expect(brazeAttributes().map((a) => a.external_id)).toEqual(['late-user']);
    });

    it('rejects unknown task types and a source_stream without a source app, naming the field', async () => {
      const destinationAppId = await brazeApp();
      const unknown = await h
        .as(t.key)
        .post('/api/v1/integrations')
        .send({
          destinationAppId,
          dataType: 'users',
          schedule: { frequencyValue: 1, frequencyUnit: 'days', rollingWindowDays: 7 },
          config: { global: {}, tasks: [{ task_type: 'teleport' }] },
        });
      expect(unknown.status).toBe(422);
      expect(unknown.body).toMatchObject({
        code: 'invalid_integration_task',
        errors: [{ path: 'body.config.tasks[0].task_type' }],
      });
      const noSource = await h
        .as(t.key)
        .post('/api/v1/integrations')
        .send({
          destinationAppId,
          dataType: 'users',
          schedule: { frequencyValue: 1, frequencyUnit: 'days', rollingWindowDays: 7 },
          config: { global: {}, tasks: [{ task_type: 'source_stream', stream: 'customers' }] },
        });
      expect(noSource.status).toBe(422);
      expect(noSource.body).toMatchObject({ errors: [{ path: 'body.config.tasks[0].stream' }] });
    });

    it('never logs the destination credentials', () => {
      expect(logs.join('')).not.toContain(lookAlikeCredentials.braze.apiKey);
      expect(logs.join('')).not.toContain(lookAlikeCredentials.amplitude.apiKey);
    });
  });

  describe('a webhook at an internal address (SSRF)', () => {
    it('is refused at connect time, and the job tells the tenant a category, not the address or a body', async () => {
      const internal = await startLookAlikeVendor('webhook');
      try {
        const webhookApp = await app('webhook', { signingSecret: 'whsec-ssrf' }, {});
        // The API refuses such a URL when it is saved (apps/tenant-urls.test.ts); one stored
        // before that check, or one whose name resolves elsewhere later, meets the guard here.
        await h.db.dataSource
          .getRepository(AppEntity)
          .update(webhookApp, { config: { url: `${internal.url.replace('localhost', '127.0.0.1')}/_bulk` } });
        await warehouse.seed(t.accountId, [userRow('ssrf-1', new Date())]);
        const created = await integration({
          destinationAppId: webhookApp,
          config: { global: {}, tasks: [{ task_type: 'user_attributes', fields: ['plan'] }] },
        });
        const failed = await run(created.id);
        expect(failed).toMatchObject({
          status: 'failed',
          error: { code: 'destination_rejected', message: 'webhook: address_refused' },
        });
        expect(await detail(created.id)).toMatchObject({
          lastError: { code: 'destination_rejected', message: 'webhook: address_refused' },
        });
        expect(JSON.stringify(failed)).not.toContain('127.0.0.1');
        expect(internal.requests).toHaveLength(0);
        // Operators find the address in the logs.
        expect(logs.join('')).toContain('refused to connect to 127.0.0.1 (loopback)');
      } finally {
        await internal.close();
      }
    });
  });
});
