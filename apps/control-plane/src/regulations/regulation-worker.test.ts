import { randomUUID } from 'node:crypto';
import { PassThrough } from 'node:stream';
import type { Admin, Producer } from 'kafkajs';
import { deletionClientFor } from '@pipeline/catalog';
import { loadConfig } from '@pipeline/config';
import {
  AmplitudeForwarder,
  consumerGroupFor,
  deliveryHeaders,
  deliveryTopicsFor,
  retryGroupFor,
  vendorClientOptions,
} from '@pipeline/destinations';
import {
  lookAlikeCredentials,
  lookAlikeDestination,
  startLookAlikeVendor,
  type LookAlikeServer,
} from '@pipeline/destinations/testing';
import { normalizeEvent, type TrackingEvent } from '@pipeline/events';
import {
  createKafka,
  createProducer,
  ensureTopics,
  kafkaConfigSchema,
  pipelineTopics,
  prefixedTopic,
} from '@pipeline/kafka';
import { createLogger } from '@pipeline/logger';
import {
  createRedis,
  debuggerKeys,
  debugPayload,
  DebugStreamWriter,
  type DebugEventRecord,
  type RedisClient,
} from '@pipeline/redis';
import { warehouseSchemaFor } from '@pipeline/tenancy';
import { CredentialCipher } from '../apps/credential-cipher';
import { DeadLetterIndex } from '../dead-letters/dead-letter-index';
import { eraseFromDeadLetters } from '../dead-letters/dead-letter-erasure';
import { eraseFromDebugger } from '../debugger/debugger-erasure';
import { startHarness, TEST_CREDENTIAL_KEYS, type Harness, type Tenant } from '../testing/harness';
import { waitUntil } from '../testing/wait';
import { startScratchWarehouse, type ScratchWarehouse } from '../testing/warehouse';
import { RegulationFence } from './regulation-fence';
import { resolvedIntegration } from './regulation-vendors';
import { RegulationWorker, defaultRegulationWorkerOptions } from './regulation-worker';

// The regulation worker end to end on real parts: a PostgreSQL warehouse holding the subject's
// and a bystander's rows, the dead-letter index, the debugger's Redis streams, the fence on a
// real broker (the kinds' groups moved with the admin API, as consumers committing would), and
// vendor look-alikes implementing the deletion endpoints.

const logs: string[] = [];
const stream = new PassThrough();
stream.on('data', (chunk: Buffer) => logs.push(chunk.toString('utf8')));
const logger = createLogger({ service: 'regulation-worker-test', stream, level: 'debug' });
const kafka = createKafka(loadConfig(kafkaConfigSchema, process.env), {
  clientId: 'regulation-worker-test',
  logger,
});
const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';

interface Target {
  target: string;
  kind: string;
  status: string;
  appType: string | null;
  lastError: { code: string; message: string } | null;
}
interface Regulation {
  id: string;
  overallStatus: string;
  cutoff: string | null;
  targets: Target[];
}

describe('regulation worker (real PostgreSQL, Kafka, Redis and vendor look-alikes)', () => {
  const prefix = `test.${randomUUID()}.`;
  const kinds = ['warehouse', 'amplitude', 'braze', 'meta_conversions'];
  let h: Harness;
  let warehouse: ScratchWarehouse;
  let admin: Admin;
  let producer: Producer;
  let redis: RedisClient;
  let writer: DebugStreamWriter;
  let amplitude: LookAlikeServer;
  let braze: LookAlikeServer;
  let fence: RegulationFence;
  let worker: RegulationWorker;
  const cipher = new CredentialCipher(TEST_CREDENTIAL_KEYS);
  const debugKeys: string[] = [];

  beforeAll(async () => {
    warehouse = await startScratchWarehouse('regulation worker warehouse');
    h = await startHarness('regulation worker', {
      warehouse: warehouse.warehouses,
      warehouseUrl: warehouse.url,
    });
    amplitude = await startLookAlikeVendor('amplitude');
    braze = await startLookAlikeVendor('braze');
    await ensureTopics(
      kafka,
      [
        prefixedTopic(pipelineTopics.trackingEvents, prefix),
        ...kinds.map((kind) => deliveryTopicsFor(kind, prefix).retry),
      ],
      { replicationFactor: 1, logger },
    );
    admin = kafka.admin();
    await admin.connect();
    producer = createProducer(kafka);
    await producer.connect();
    redis = createRedis({ REDIS_URL }, { logger });
    await redis.connect();
    writer = new DebugStreamWriter(redis, { maxLen: 500, ttlSeconds: 600, maxPerSecond: 1_000_000 }, logger);
    fence = new RegulationFence(kafka, prefix);
    const baseUrls = { amplitude: amplitude.url, braze: braze.url };
    worker = new RegulationWorker(
      {
        dataSource: h.db.dataSource,
        service: h.services.regulations.service,
        cipher,
        warehouses: warehouse.warehouses,
        fence,
        eraseDeadLetters: (accountId, regulation, options) =>
          eraseFromDeadLetters(h.db.dataSource, accountId, regulation, options),
        eraseDebugger: (keys, regulation) => eraseFromDebugger(redis, keys, regulation),
        vendorClient: (appType) => deletionClientFor(appType, { baseUrls }),
        resolveIntegration: (id) => resolvedIntegration(h.db.dataSource, cipher, id),
        logger,
      },
      {
        ...defaultRegulationWorkerOptions,
        fenceDelayMs: 0,
        retryBaseMs: 50,
        vendorPollMs: 1000,
        warehouseRowsPerStep: 2,
      },
    );
  }, 120_000);

  afterAll(async () => {
    await fence.close();
    await producer.disconnect();
    await admin.disconnect();
    if (debugKeys.length > 0) await redis.del(...debugKeys);
    redis.disconnect();
    await amplitude.close();
    await braze.close();
    await h.close();
    await warehouse.drop();
  });

  /** Every kind's outbox and retry groups commit up to the topics' ends: consumers that passed everything. */
  const consumersCaughtUp = async (only = kinds) => {
    const outbox = prefixedTopic(pipelineTopics.trackingEvents, prefix).topic;
    const commits = only.flatMap((kind) => {
      const group = consumerGroupFor(kind, prefix);
      return [
        [outbox, group],
        [deliveryTopicsFor(kind, prefix).retry.topic, retryGroupFor(group)],
      ] as const;
    });
    await Promise.all(
      commits.map(async ([topic, groupId]) => {
        const ends = await admin.fetchTopicOffsets(topic);
        await admin.setOffsets({
          groupId,
          topic,
          partitions: ends.map((p) => ({ partition: p.partition, offset: p.high })),
        });
      }),
    );
  };

  const receivedAt = new Date(Date.now() - 60_000);
  const event = (e: Record<string, unknown>): TrackingEvent =>
    ({ messageId: randomUUID(), timestamp: receivedAt.toISOString(), ...e }) as TrackingEvent;
  const seed = async (accountId: string, events: TrackingEvent[], at = receivedAt) =>
    warehouse.seed(
      accountId,
      events.map((e) => normalizeEvent(e, { receivedAt: at, ip: null, userAgent: null })),
    );
  const rows = async (accountId: string, table: string, column: string, id: string) =>
    Number(
      (
        await warehouse.query<{ n: string }>(
          `SELECT count(*) AS n FROM "${warehouseSchemaFor(accountId)}"."${table}" WHERE ${column} = $1`,
          [id],
        )
      ).rows[0]?.n,
    );

  async function app(t: Tenant, appType: string, credentials: object, config: object = {}): Promise<string> {
    const res = await h
      .as(t.key)
      .post('/api/v1/apps')
      .send({ appType, displayName: `${appType} app`, credentials, config });
    expect(res.status).toBe(201);
    return res.body.data.id as string;
  }
  async function integration(t: Tenant, source: string, destination: string): Promise<string> {
    const res = await h
      .as(t.key)
      .post('/api/v1/integrations')
      .send({
        sourceAppId: source,
        destinationAppId: destination,
        dataType: 'events',
        config: { global: {}, tasks: [{ task_type: 'events' }] },
        schedule: { frequencyValue: 1, frequencyUnit: 'hours', rollingWindowDays: 1 },
      });
    expect(res.status).toBe(201);
    return res.body.data.id as string;
  }

  const regulation = async (t: Tenant, id: string) =>
    (await h.as(t.key).get(`/api/v1/regulations/${id}`).expect(200)).body.data.regulation as Regulation;
  const statuses = (r: Regulation) =>
    Object.fromEntries(r.targets.map((t) => [t.appType ?? t.kind, t.status]));
  const untilFinished = async (t: Tenant, id: string) => {
    let current = await regulation(t, id);
    await waitUntil(`the regulation to finish (${JSON.stringify(current.targets)})`, async () => {
      await worker.cycle();
      current = await regulation(t, id);
      return current.overallStatus !== 'RUNNING';
    });
    return current;
  };

  it('erases the subject everywhere once the consumers passed the fence, and leaves everyone else', async () => {
    const t = await h.tenant();
    const other = await h.tenant();
    const x = `user-${randomUUID()}`;
    const y = `user-${randomUUID()}`;
    // The look-alike Amplitude knows x (it deletes only users it holds).
    await new AmplitudeForwarder(vendorClientOptions({}, amplitude.url)).send(
      lookAlikeDestination(amplitude),
      [
        {
          event: event({ type: 'identify', userId: x, traits: {} }),
          receipt: { receivedAt, ip: null, userAgent: null },
        },
      ],
    );
    const web = (
      await h.as(t.key).post('/api/v1/apps').send({ appType: 'web_tracking', displayName: 'Site' })
    ).body.data.id as string;
    await integration(t, web, await app(t, 'amplitude', lookAlikeCredentials.amplitude));
    await integration(
      t,
      web,
      await app(t, 'braze', lookAlikeCredentials.braze, { restEndpoint: 'https://rest.iad-01.braze.com' }),
    );
    await integration(
      t,
      web,
      await app(t, 'meta_conversions', lookAlikeCredentials.meta_conversions ?? { accessToken: 'x' }, {
        pixelId: '1234567890',
      }),
    );

    await seed(t.accountId, [
      event({ type: 'track', event: 'Bought', userId: x, anonymousId: 'anon-x' }),
      event({ type: 'track', event: 'Bought', userId: x, anonymousId: 'anon-x' }),
      event({ type: 'track', event: 'Viewed', userId: x, anonymousId: 'anon-x' }),
      event({ type: 'identify', userId: x, traits: { email: 'x@example.com' } }),
      event({ type: 'alias', userId: 'x-later', previousId: x }),
      event({ type: 'track', event: 'Bought', userId: y, anonymousId: 'anon-y' }),
      event({ type: 'identify', userId: y, traits: { email: 'y@example.com' } }),
    ]);
    // The same user id in another account is another person.
    await seed(other.accountId, [event({ type: 'track', event: 'Bought', userId: x })]);
    // A dead letter holding only x's event, and one holding x's and y's.
    const index = new DeadLetterIndex(h.db.dataSource, logger, { maxPerAccount: 1000 });
    const envelope = (events: TrackingEvent[]) => ({
      v: 2,
      accountId: t.accountId,
      writeKeyId: randomUUID(),
      batchId: randomUUID(),
      receivedAt: receivedAt.toISOString(),
      ip: null,
      userAgent: null,
      events,
    });
    let offset = 0;
    for (const events of [
      [event({ type: 'track', event: 'A', userId: x })],
      [event({ type: 'track', event: 'B', userId: x }), event({ type: 'track', event: 'C', userId: y })],
    ]) {
      offset += 1;
      await index.index('amplitude', {
        topic: deliveryTopicsFor('amplitude', prefix).deadLetter.topic,
        partition: 0,
        offset: String(offset),
        key: Buffer.from(`${t.accountId}:`),
        value: Buffer.from(JSON.stringify(envelope(events))),
        headers: {
          [deliveryHeaders.target]: 'amplitude',
          [deliveryHeaders.reason]: 'http_400: refused',
          [deliveryHeaders.origin]: `outbox/0/${offset}`,
          [deliveryHeaders.permanent]: 'true',
        },
      });
    }
    // The debugger's copies of x's and y's events.
    const writeKeyId = (await h.as(t.key).post('/api/v1/write-keys').send({ name: 'site' })).body.data
      .id as string;
    debugKeys.push(debuggerKeys.events(writeKeyId), debuggerKeys.outcomes(writeKeyId));
    for (const user of [x, y]) {
      const { payload } = debugPayload({ type: 'track', event: 'A', userId: user, messageId: randomUUID() });
      const record: DebugEventRecord = {
        receivedAt: receivedAt.toISOString(),
        requestId: randomUUID(),
        status: 'accepted',
        type: 'track',
        event: 'A',
        messageId: null,
        errors: [],
        payload,
      };
      writer.add(debuggerKeys.events(writeKeyId), ['d', JSON.stringify(record)]);
    }
    await waitUntil('the debugger entries', async () => writer.stats.recorded >= 2);
    const dryRun = await h
      .as(t.key)
      .post('/api/v1/regulations')
      .send({ regulationType: 'SUPPRESS_WITH_DELETE', subjectType: 'USER_ID', subjectIds: [x], dryRun: true })
      .expect(200);
    expect(dryRun.body.data).toMatchObject({
      dryRun: true,
      subjects: 1,
      deadLetters: 2,
      warehouses: [{ rows: { events: 3, users: 1, aliases: 1, groups: 0 } }],
    });
    expect(
      (dryRun.body.data.destinations as { appType: string; deletion: string }[])
        .map((d) => [d.appType, d.deletion])
        .sort(),
    ).toEqual([
      ['amplitude', 'supported'],
      ['braze', 'supported'],
      ['meta_conversions', 'not_supported'],
    ]);

    // Records in flight when the regulation takes effect: the consumers have not read them yet.
    await producer.send({
      topic: prefixedTopic(pipelineTopics.trackingEvents, prefix).topic,
      messages: [0, 1, 2].map((partition) => ({ partition, key: `${t.accountId}:`, value: 'in flight' })),
    });
    await producer.send({
      topic: deliveryTopicsFor('amplitude', prefix).retry.topic,
      messages: [{ partition: 0, key: `${t.accountId}:`, value: 'held for a retry' }],
    });
    const created = await h
      .as(t.key)
      .post('/api/v1/regulations')
      .send({ regulationType: 'SUPPRESS_WITH_DELETE', subjectType: 'USER_ID', subjectIds: [x] })
      .expect(200);
    const id = created.body.data.regulateId as string;

    // The consumers have not passed what was in flight: nothing is erased or sent.
    for (let i = 0; i < 3; i += 1) await worker.cycle();
    let current = await regulation(t, id);
    expect(statuses(current)).toEqual({
      warehouse: 'waiting_fence',
      amplitude: 'waiting_fence',
      braze: 'waiting_fence',
      meta_conversions: 'not_supported',
      dead_letters: 'done',
      debugger: 'done',
    });
    expect(await rows(t.accountId, 'events', 'user_id', x)).toBe(3);
    expect(amplitude.accepted.filter((a) => a.endpoint === 'deletions')).toEqual([]);
    expect(braze.requests.filter((r) => r.path === '/users/delete')).toEqual([]);
    // Our own copies go at once: nothing can put them back (the indexer and the debugger drop x).
    const letters = (await h.db.dataSource.query(
      'SELECT message_ids, event_count FROM dead_letters WHERE account_id = $1',
      [t.accountId],
    )) as { message_ids: string[]; event_count: number }[];
    expect(letters.map((l) => l.event_count)).toEqual([1]);
    const debugged = (await redis.xrange(debuggerKeys.events(writeKeyId), '-', '+')).map(
      ([, fields]) => (JSON.parse(fields[1] as string) as DebugEventRecord).payload,
    );
    expect(JSON.stringify(debugged)).not.toContain(x);
    expect(JSON.stringify(debugged)).toContain(y);

    await consumersCaughtUp();
    current = await untilFinished(t, id);
    expect(current.overallStatus).toBe('FINISHED');
    expect(statuses(current)).toEqual({
      warehouse: 'done',
      amplitude: 'done',
      braze: 'done',
      meta_conversions: 'not_supported',
      dead_letters: 'done',
      debugger: 'done',
    });
    for (const [table, column] of [
      ['events', 'user_id'],
      ['users', 'user_id'],
      ['aliases', 'previous_id'],
    ])
      expect(await rows(t.accountId, table as string, column as string, x)).toBe(0);
    expect(await rows(t.accountId, 'events', 'user_id', y)).toBe(1);
    expect(await rows(t.accountId, 'users', 'user_id', y)).toBe(1);
    expect(await rows(other.accountId, 'events', 'user_id', x)).toBe(1);
    expect(amplitude.accepted.filter((a) => a.endpoint === 'deletions').map((a) => a.item.user_id)).toEqual([
      x,
    ]);
    const brazeDeletes = braze.requests.filter((r) => r.path === '/users/delete');
    expect(brazeDeletes.map((r) => JSON.parse(r.body).external_ids)).toEqual([[x]]);
    // The audit record stays; the raw ids and captured emails are gone.
    const [row] = (await h.db.dataSource.query(
      'SELECT sealed_subjects, sealed_identities, subject_count FROM regulations WHERE id = $1',
      [id],
    )) as { sealed_subjects: string | null; sealed_identities: string | null; subject_count: number }[];
    expect(row).toEqual({ sealed_subjects: null, sealed_identities: null, subject_count: 1 });
    expect(logs.join('')).not.toContain(x);
  }, 180_000);

  it('fails a destination whose app lacks the credential the vendor needs, and still finishes the rest', async () => {
    const t = await h.tenant();
    const x = `user-${randomUUID()}`;
    const web = (
      await h.as(t.key).post('/api/v1/apps').send({ appType: 'web_tracking', displayName: 'Site' })
    ).body.data.id as string;
    await integration(t, web, await app(t, 'amplitude', { apiKey: lookAlikeCredentials.amplitude?.apiKey }));
    await seed(t.accountId, [event({ type: 'track', event: 'Bought', userId: x })]);
    const created = await h
      .as(t.key)
      .post('/api/v1/regulations')
      .send({ regulationType: 'DELETE_ONLY', subjectType: 'USER_ID', subjectIds: [x] })
      .expect(200);
    await consumersCaughtUp();
    const done = await untilFinished(t, created.body.data.regulateId as string);
    expect(done.overallStatus).toBe('PARTIAL_SUCCESS');
    const amp = done.targets.find((target) => target.appType === 'amplitude');
    expect(amp).toMatchObject({ status: 'failed', lastError: { code: 'credential_missing' } });
    expect(amp?.lastError?.message).toContain('secretKey');
    expect(statuses(done).warehouse).toBe('done');
    expect(await rows(t.accountId, 'events', 'user_id', x)).toBe(0);
  }, 180_000);

  it('DELETE_ONLY erases what was received up to the cut-off and keeps what came after', async () => {
    const t = await h.tenant();
    const x = `user-${randomUUID()}`;
    await seed(t.accountId, [event({ type: 'track', event: 'Before', userId: x })]);
    const created = await h
      .as(t.key)
      .post('/api/v1/regulations')
      .send({ regulationType: 'DELETE_INTERNAL', subjectType: 'USER_ID', subjectIds: [x] })
      .expect(200);
    const cutoff = Date.parse(created.body.data.regulation.cutoff as string);
    await seed(t.accountId, [event({ type: 'track', event: 'After', userId: x })], new Date(cutoff + 1000));
    await consumersCaughtUp(['warehouse']);
    const done = await untilFinished(t, created.body.data.regulateId as string);
    expect(done.overallStatus).toBe('FINISHED');
    const left = await warehouse.query<{ event: string }>(
      `SELECT event FROM "${warehouseSchemaFor(t.accountId)}".events WHERE user_id = $1`,
      [x],
    );
    expect(left.rows.map((r) => r.event)).toEqual(['After']);
  }, 180_000);
});
