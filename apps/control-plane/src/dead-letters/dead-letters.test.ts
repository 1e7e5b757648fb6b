import { randomUUID } from 'node:crypto';
import { PassThrough } from 'node:stream';
import { Kafka, logLevel, type Producer } from 'kafkajs';
import { AppError } from '@pipeline/errors';
import { loadConfig } from '@pipeline/config';
import { deliveryHeaders, deliveryTopicsFor } from '@pipeline/destinations';
import { topicRecords } from '@pipeline/destinations/testing';
import { createKafka, createProducer, ensureTopics, kafkaConfigSchema } from '@pipeline/kafka';
import { createLogger } from '@pipeline/logger';
import { createRedis, type RedisClient } from '@pipeline/redis';
import { INGESTION_KEY_PREFIX, writeKeyWindowKeys } from '@pipeline/tenancy';
import { startHarness, type Harness, type Tenant } from '../testing/harness';
import { waitUntil } from '../testing/wait';
import { DeadLetterIndex, DeadLetterIndexer, type IndexOutcome } from './dead-letter-index';
import { DeadLetterRetention } from './dead-letter-retention';
import { defaultDeadLetterLimits } from './dead-letter-limits';
import { AccountReplayLimiter, WriteKeyEventCounter } from './dead-letter-replay-limits';
import { KafkaDeadLetterReplayer } from './dead-letter-replayer';
import { DeadLetterService } from './dead-letter.service';

// The dead-letter index and API against real Kafka and PostgreSQL: records written to a kind's
// real dead-letter topic with the headers the consumer runner's park() writes, indexed by the
// real consumer, listed, replayed into the real retry topic, and discarded.

const logger = createLogger({ service: 'dead-letters-test', stream: new PassThrough() });
const kafka = createKafka(loadConfig(kafkaConfigSchema, process.env), {
  clientId: 'dead-letters-test',
  logger,
});
const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
/** Replays one account may make per minute in this suite. */
const REPLAYS_PER_MINUTE = 6;
const suiteLimits = { ...defaultDeadLetterLimits, retentionDays: 3650, replaysPerMinute: REPLAYS_PER_MINUTE };

interface View {
  id: string;
  destination: string;
  destinationId: string;
  destinationName: string | null;
  reasonCode: string;
  reason: string;
  attempts: number;
  permanent: boolean;
  deadLetterCount: number;
  firstSeenAt: string;
  lastSeenAt: string;
  status: string;
  replayedAt: string | null;
  discardedAt: string | null;
  messageIds: string[];
  eventCount: number;
  events: Record<string, unknown>[];
}

describe('dead letters: index, list, replay and discard (real Kafka and PostgreSQL)', () => {
  const prefix = `test.${randomUUID()}.`;
  const kinds = ['amplitude', 'webhook', 'warehouse'];
  const amplitude = deliveryTopicsFor('amplitude', prefix);
  const webhook = deliveryTopicsFor('webhook', prefix);
  let h: Harness;
  let producer: Producer;
  let replayer: KafkaDeadLetterReplayer;
  let indexer: DeadLetterIndexer;
  const outcomes: IndexOutcome[] = [];
  let a: Tenant;
  let b: Tenant;
  let aIntegration: string;
  // As the process has them: the control plane's own (prefixed) and the shared store's.
  let controlPlaneRedis: RedisClient;
  let sharedRedis: RedisClient;

  beforeAll(async () => {
    replayer = new KafkaDeadLetterReplayer(kafka, prefix);
    controlPlaneRedis = createRedis({ REDIS_URL }, { logger, keyPrefix: 'control-plane:' });
    sharedRedis = createRedis({ REDIS_URL }, { logger });
    await Promise.all([controlPlaneRedis.connect(), sharedRedis.connect()]);
    h = await startHarness('dead letters', {
      deadLetterReplayer: replayer,
      deadLetterOptions: {
        replayLimiter: new AccountReplayLimiter(REPLAYS_PER_MINUTE, controlPlaneRedis, logger),
        writeKeyEvents: new WriteKeyEventCounter(sharedRedis, logger),
        // The fixed dates below stay listed whenever the suite runs; the retention's own test
        // uses a service of the default retention.
        limits: suiteLimits,
      },
    });
    await ensureTopics(
      kafka,
      kinds.flatMap((kind) => [
        deliveryTopicsFor(kind, prefix).retry,
        deliveryTopicsFor(kind, prefix).deadLetter,
      ]),
      { replicationFactor: 1, logger },
    );
    producer = createProducer(kafka);
    await producer.connect();
    indexer = new DeadLetterIndexer({
      kafka,
      dataSource: h.db.dataSource,
      logger,
      kinds,
      topicPrefix: prefix,
      replicationFactor: 1,
      limits: suiteLimits,
      onIndexed: (outcome) => outcomes.push(outcome),
    });
    indexer.start();
    a = await h.tenant();
    b = await h.tenant();
    const api = h.as(a.key);
    const web = (await api.post('/api/v1/apps').send({ appType: 'web_tracking', displayName: 'Site' })).body
      .data.id as string;
    const amp = (
      await api
        .post('/api/v1/apps')
        .send({ appType: 'amplitude', displayName: 'Amp EU', credentials: { apiKey: 'amp' } })
    ).body.data.id as string;
    const integration = await api.post('/api/v1/integrations').send({
      sourceAppId: web,
      destinationAppId: amp,
      dataType: 'events',
      config: { global: {}, tasks: [{ task_type: 'events' }] },
      schedule: { frequencyValue: 1, frequencyUnit: 'hours', rollingWindowDays: 1 },
    });
    expect(integration.status).toBe(201);
    aIntegration = integration.body.data.id as string;
  }, 60_000);

  afterAll(async () => {
    await indexer.stop();
    await producer.disconnect();
    await replayer.close();
    await h.close();
    controlPlaneRedis.disconnect();
    sharedRedis.disconnect();
  });

  let origins = 0;
  /** A record as park() dead-letters it: an outbox envelope of `accountId` with its headers. */
  const deadLetter = (
    accountId: string,
    options: {
      target: string;
      reason?: string;
      permanent?: boolean;
      attempt?: number;
      origin?: string;
      at?: string;
      messageId?: string;
      kind?: string;
      writeKeyId?: string;
    },
  ) => {
    const messageId = options.messageId ?? randomUUID();
    const envelope = {
      v: 2,
      accountId,
      writeKeyId: options.writeKeyId ?? randomUUID(),
      batchId: randomUUID(),
      receivedAt: new Date().toISOString(),
      ip: null,
      userAgent: null,
      events: [
        {
          type: 'track',
          event: 'Signed Up',
          messageId,
          anonymousId: 'anon-1',
          timestamp: '2026-11-27T10:00:00Z',
          properties: { plan: 'pro' },
        },
      ],
    };
    return {
      messageId,
      origin: options.origin ?? `${prefix}tracking.events.v1/0/${(origins += 1)}`,
      message: {
        key: 'anon-1',
        value: JSON.stringify(envelope),
        headers: {
          [deliveryHeaders.destination]: options.kind ?? 'amplitude',
          [deliveryHeaders.target]: options.target,
          [deliveryHeaders.attempt]: String(options.attempt ?? 1),
          [deliveryHeaders.reason]: options.reason ?? 'http_400: Amplitude refused the events',
          [deliveryHeaders.origin]: options.origin ?? `${prefix}tracking.events.v1/0/${origins}`,
          [deliveryHeaders.permanent]: String(options.permanent ?? true),
          [deliveryHeaders.deadLetteredAt]: options.at ?? new Date().toISOString(),
        },
      },
    };
  };

  const send = async (
    topic: string,
    messages: { key: string | null; value: string | Buffer | null; headers?: Record<string, string> }[],
  ) => {
    const before = outcomes.length;
    await producer.send({ topic, acks: -1, messages });
    await waitUntil('the index to read the records', async () => outcomes.length >= before + messages.length);
    return outcomes.slice(before, before + messages.length);
  };

  const list = async (key: string, query = '') => {
    const response = await h.as(key).get(`/api/v1/dead-letters${query}`);
    expect(response.status).toBe(200);
    return response.body as {
      data: View[];
      pagination: { total: number; limit: number; offset: number; nextOffset: number | null };
    };
  };

  it("indexes a dead-lettered record and lists it with its values, under the account's own scope", async () => {
    const letter = deadLetter(a.accountId, {
      target: aIntegration,
      at: '2026-11-27T12:00:00.000Z',
      attempt: 1,
    });
    expect(await send(amplitude.deadLetter.topic, [letter.message])).toEqual(['inserted']);

    const page = await list(a.key, `?destinationId=${aIntegration}`);
    expect(page.pagination).toEqual({ total: 1, limit: 20, offset: 0, nextOffset: null });
    const [view] = page.data;
    expect(view).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      destination: 'amplitude',
      destinationId: aIntegration,
      destinationName: 'Amp EU',
      reasonCode: 'http_400',
      reason: 'http_400: Amplitude refused the events',
      attempts: 1,
      permanent: true,
      deadLetterCount: 1,
      firstSeenAt: '2026-11-27T12:00:00.000Z',
      lastSeenAt: '2026-11-27T12:00:00.000Z',
      status: 'pending',
      replayedAt: null,
      discardedAt: null,
      messageIds: [letter.messageId],
      eventCount: 1,
      events: [
        {
          type: 'track',
          event: 'Signed Up',
          messageId: letter.messageId,
          anonymousId: 'anon-1',
          timestamp: '2026-11-27T10:00:00Z',
          properties: { plan: 'pro' },
        },
      ],
    });
  });

  it('filters by destination, reason code and time, and pages', async () => {
    const older = deadLetter(a.accountId, {
      target: 'webhook-target',
      kind: 'webhook',
      reason: 'attempts: HTTP 503',
      permanent: false,
      attempt: 6,
      at: '2026-11-20T08:00:00.000Z',
    });
    await send(webhook.deadLetter.topic, [older.message]);

    const hooks = await list(a.key, '?destination=webhook');
    expect(
      hooks.data.map((v) => [v.destination, v.destinationId, v.destinationName, v.reasonCode, v.attempts]),
    ).toEqual([['webhook', 'webhook-target', null, 'attempts_exhausted', 6]]);
    expect((await list(a.key, '?reasonCode=attempts_exhausted')).data.map((v) => v.messageIds[0])).toEqual([
      older.messageId,
    ]);
    expect((await list(a.key, '?reasonCode=http_400')).data.map((v) => v.destination)).toEqual(['amplitude']);
    expect((await list(a.key, '?until=2026-11-21T00:00:00Z')).data.map((v) => v.messageIds[0])).toEqual([
      older.messageId,
    ]);
    expect((await list(a.key, '?since=2026-11-21T00:00:00Z')).data.map((v) => v.destination)).toEqual([
      'amplitude',
    ]);
    const first = await list(a.key, '?limit=1');
    expect(first.data.map((v) => v.destination)).toEqual(['amplitude']);
    expect(first.pagination).toEqual({ total: 2, limit: 1, offset: 0, nextOffset: 1 });
    expect((await list(a.key, '?limit=1&offset=1')).data.map((v) => v.destination)).toEqual(['webhook']);
    expect((await list(a.key, '?status=replayed')).data).toEqual([]);
  });

  it("shows account B none of A's dead letters, and replaying or discarding one of A's ids answers 404", async () => {
    expect(await list(b.key)).toEqual({
      data: [],
      pagination: { total: 0, limit: 20, offset: 0, nextOffset: null },
    });
    const [aLetter] = (await list(a.key)).data;
    const replay = await h
      .as(b.key)
      .post('/api/v1/dead-letters/replay')
      .send({ ids: [aLetter!.id] });
    expect(replay.status).toBe(404);
    expect(replay.body.code).toBe('dead_letter_not_found');
    const discard = await h
      .as(b.key)
      .post('/api/v1/dead-letters/discard')
      .send({ ids: [aLetter!.id] });
    expect([discard.status, discard.body.code]).toEqual([404, 'dead_letter_not_found']);
    // A's filters do not reach A's records through B's key either.
    expect(
      (await h.as(b.key).post('/api/v1/dead-letters/replay').send({ destination: 'amplitude' })).body,
    ).toEqual({ replayed: 0, skipped: 0 });
    expect((await list(a.key)).data.every((v) => v.status === 'pending')).toBe(true);
  });

  it('replays once: twice by id puts exactly one record in the retry topic, and an unknown id replays nothing', async () => {
    const letter = deadLetter(a.accountId, { target: aIntegration, reason: 'http_422: bad event' });
    await send(amplitude.deadLetter.topic, [letter.message]);
    const [view] = (await list(a.key, '?reasonCode=http_422')).data;
    const mixed = await h
      .as(a.key)
      .post('/api/v1/dead-letters/replay')
      .send({ ids: [view!.id, randomUUID()] });
    expect([mixed.status, mixed.body.code]).toEqual([404, 'dead_letter_not_found']);

    const [first, second] = await Promise.all([
      h
        .as(a.key)
        .post('/api/v1/dead-letters/replay')
        .send({ ids: [view!.id] }),
      h
        .as(a.key)
        .post('/api/v1/dead-letters/replay')
        .send({ ids: [view!.id] }),
    ]);
    expect([first.status, second.status]).toEqual([200, 200]);
    expect([first.body, second.body].sort((x, y) => y.replayed - x.replayed)).toEqual([
      { replayed: 1, skipped: 0 },
      { replayed: 0, skipped: 1 },
    ]);
    expect(
      (
        await h
          .as(a.key)
          .post('/api/v1/dead-letters/replay')
          .send({ ids: [view!.id] })
      ).body,
    ).toEqual({ replayed: 0, skipped: 1 });

    const retried = (await topicRecords(kafka, amplitude.retry.topic)).filter((r) =>
      r.value.includes(letter.messageId),
    );
    expect(retried).toHaveLength(1);
    expect(retried[0]!.headers).toMatchObject({
      [deliveryHeaders.destination]: 'amplitude',
      [deliveryHeaders.target]: aIntegration,
      [deliveryHeaders.attempt]: '0',
      [deliveryHeaders.origin]: letter.origin,
    });
    expect(JSON.parse(retried[0]!.value).events[0].messageId).toBe(letter.messageId);

    const [replayed] = (await list(a.key, '?status=replayed')).data;
    expect(replayed).toMatchObject({ id: view!.id, status: 'replayed', replayedAt: expect.any(String) });

    // The replayed record dead-letters again: the same row, counted twice, pending, first seen kept.
    const again = deadLetter(a.accountId, {
      target: aIntegration,
      reason: 'http_422: still bad',
      origin: letter.origin,
      messageId: letter.messageId,
      attempt: 1,
    });
    expect(await send(amplitude.deadLetter.topic, [again.message])).toEqual(['updated']);
    const [back] = (await list(a.key, '?reasonCode=http_422')).data;
    expect(back).toMatchObject({
      id: view!.id,
      status: 'pending',
      deadLetterCount: 2,
      reason: 'http_422: still bad',
      firstSeenAt: view!.firstSeenAt,
    });
  });

  it('discards: a discarded letter is not replayed', async () => {
    const letter = deadLetter(a.accountId, { target: aIntegration, reason: 'http_413: too large' });
    await send(amplitude.deadLetter.topic, [letter.message]);
    const discarded = await h.as(a.key).post('/api/v1/dead-letters/discard').send({ reasonCode: 'http_413' });
    expect([discarded.status, discarded.body]).toEqual([200, { discarded: 1, skipped: 0 }]);
    const [view] = (await list(a.key, '?status=discarded')).data;
    expect(view).toMatchObject({
      reasonCode: 'http_413',
      status: 'discarded',
      discardedAt: expect.any(String),
    });
    expect(
      (
        await h
          .as(a.key)
          .post('/api/v1/dead-letters/replay')
          .send({ ids: [view!.id] })
      ).body,
    ).toEqual({ replayed: 0, skipped: 1 });
    expect(
      (await topicRecords(kafka, amplitude.retry.topic)).some((r) => r.value.includes(letter.messageId)),
    ).toBe(false);
  });

  it('answers 503 dead_letters_unavailable and keeps the letters pending when Kafka does not take them', async () => {
    const letter = deadLetter(a.accountId, { target: aIntegration, reason: 'http_410: gone for now' });
    await send(amplitude.deadLetter.topic, [letter.message]);
    // A real client of a broker that is not there (port 1), retrying once, so it fails soon.
    const away = new Kafka({
      clientId: 'away',
      brokers: ['127.0.0.1:1'],
      connectionTimeout: 200,
      retry: { retries: 1, initialRetryTime: 50 },
      logLevel: logLevel.NOTHING,
    });
    const unreachable = new KafkaDeadLetterReplayer(away, prefix);
    const service = new DeadLetterService(h.db.dataSource, unreachable);
    const refused = await service
      .replay(a.accountId, { reasonCode: 'http_410' })
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(AppError);
    expect([(refused as AppError).status, (refused as AppError).code]).toEqual([
      503,
      'dead_letters_unavailable',
    ]);
    const [view] = (await list(a.key, '?reasonCode=http_410')).data;
    expect(view).toMatchObject({ status: 'pending', replayedAt: null });
    // The working path replays it afterwards, once.
    expect(
      (await h.as(a.key).post('/api/v1/dead-letters/replay').send({ reasonCode: 'http_410' })).body,
    ).toEqual({ replayed: 1, skipped: 0 });
    await unreachable.close();
  });

  it('needs each scope: a key without it answers 403', async () => {
    const readOnly = await a.keyWith(['dead_letters.read']);
    expect((await h.as(readOnly).get('/api/v1/dead-letters')).status).toBe(200);
    for (const path of ['replay', 'discard']) {
      const response = await h
        .as(readOnly)
        .post(`/api/v1/dead-letters/${path}`)
        .send({ destination: 'amplitude' });
      expect(response.status).toBe(403);
    }
    const replayOnly = await a.keyWith(['dead_letters.replay']);
    expect((await h.as(replayOnly).get('/api/v1/dead-letters')).status).toBe(403);
    expect(
      (await h.as(replayOnly).post('/api/v1/dead-letters/discard').send({ destination: 'amplitude' })).status,
    ).toBe(403);
  });

  it('answers bad selectors and filters with 400 and a code', async () => {
    const replay = (body: object) => h.as(a.key).post('/api/v1/dead-letters/replay').send(body);
    const codeOf = async (response: Promise<{ status: number; body: { code?: string } }>) => {
      const { status, body } = await response;
      return [status, body.code];
    };
    expect(await codeOf(replay({}))).toEqual([400, 'dead_letter_selector_required']);
    expect(await codeOf(replay({ ids: [] }))).toEqual([400, 'validation_failed']);
    expect(await codeOf(replay({ ids: ['not-a-uuid'] }))).toEqual([400, 'validation_failed']);
    expect(await codeOf(replay({ destination: 'stripe' }))).toEqual([400, 'validation_failed']);
    expect(await codeOf(replay({ since: 'yesterday' }))).toEqual([400, 'validation_failed']);
    expect(await codeOf(replay({ since: '2026-11-27T00:00:00Z', until: '2026-11-26T00:00:00Z' }))).toEqual([
      400,
      'invalid_time_range',
    ]);
    expect(await codeOf(replay({ ids: 'x' }))).toEqual([400, 'validation_failed']);
    expect(await codeOf(replay({ everything: true }))).toEqual([400, 'validation_failed']);
    expect(await codeOf(h.as(a.key).post('/api/v1/dead-letters/discard').send({}))).toEqual([
      400,
      'dead_letter_selector_required',
    ]);
    expect(await codeOf(h.as(a.key).get('/api/v1/dead-letters?status=gone'))).toEqual([
      400,
      'validation_failed',
    ]);
    expect(await codeOf(h.as(a.key).get('/api/v1/dead-letters?reasonCode=HTTP%20400'))).toEqual([
      400,
      'validation_failed',
    ]);
    expect(await codeOf(h.as(a.key).get('/api/v1/dead-letters?limit=0'))).toEqual([400, 'validation_failed']);
  });

  it('goes on past a record that is not an envelope, a duplicate, and a record the database refuses', async () => {
    const good = deadLetter(a.accountId, { target: aIntegration, reason: 'http_404: gone' });
    const unknownAccount = deadLetter(randomUUID(), { target: aIntegration, reason: 'http_404: gone' });
    const outcomesOf = await send(amplitude.deadLetter.topic, [
      { key: null, value: 'not json at all', headers: { [deliveryHeaders.target]: aIntegration } },
      { key: null, value: null },
      unknownAccount.message,
      good.message,
    ]);
    expect(outcomesOf).toEqual(['not_an_envelope', 'not_an_envelope', 'refused', 'inserted']);
    const [view] = (await list(a.key, '?reasonCode=http_404')).data;
    expect(view).toMatchObject({ deadLetterCount: 1, messageIds: [good.messageId] });

    // The same Kafka record read again (a rebalance, a restart before the commit) counts once.
    const index = new DeadLetterIndex(h.db.dataSource, logger);
    const [record] = (await topicRecords(kafka, amplitude.deadLetter.topic)).filter((r) =>
      r.value.includes(good.messageId),
    );
    const again = await index.index('amplitude', {
      topic: amplitude.deadLetter.topic,
      partition: record!.partition,
      offset: record!.offset,
      key: Buffer.from('anon-1'),
      value: Buffer.from(record!.value),
      headers: record!.headers,
    });
    expect(again).toBe('duplicate');
    const [still] = (await list(a.key, '?reasonCode=http_404')).data;
    expect(still).toMatchObject({ id: view!.id, deadLetterCount: 1 });
    // Later records of every tenant are still indexed.
    const later = deadLetter(a.accountId, { target: aIntegration, reason: 'http_409: later' });
    expect(await send(amplitude.deadLetter.topic, [later.message])).toEqual(['inserted']);
  });
  /** A record of `letter` as the index's consumer hands it over, at `offset` of the amplitude dead-letter topic. */
  const recordOf = (letter: ReturnType<typeof deadLetter>, offset: number) => ({
    topic: amplitude.deadLetter.topic,
    partition: 0,
    offset: String(offset),
    key: Buffer.from(letter.message.key),
    value: Buffer.from(letter.message.value),
    headers: letter.message.headers,
  });
  let directOffsets = 1_000_000;

  it('lists a letter indexed before previews were kept: PostgreSQL previews it, the record never leaves the database', async () => {
    const c = await h.tenant();
    const letter = deadLetter(c.accountId, { target: aIntegration, reason: 'http_400: old row' });
    const broken = deadLetter(c.accountId, { target: aIntegration, reason: 'http_400: old row, NUL' });
    const index = new DeadLetterIndex(h.db.dataSource, logger);
    await index.index('amplitude', recordOf(letter, (directOffsets += 1)));
    await index.index('amplitude', recordOf(broken, (directOffsets += 1)));
    const [expected] = (await list(c.key, `?reasonCode=http_400`)).data.filter(
      (v) => v.messageIds[0] === letter.messageId,
    );
    // As the rows of the previous release: no preview, no count; one value PostgreSQL cannot read as JSON.
    await h.db.dataSource.query(
      'UPDATE dead_letters SET preview = NULL, event_count = NULL, write_key_id = NULL WHERE account_id = $1',
      [c.accountId],
    );
    await h.db.dataSource.query(
      `UPDATE dead_letters SET record_value = convert_to('{"events":[{"messageId":"m\\u0000"}]}', 'UTF8')
       WHERE account_id = $1 AND $2 = ANY(message_ids)`,
      [c.accountId, broken.messageId],
    );
    const listed = (await list(c.key)).data;
    expect(listed.map((v) => [v.messageIds[0], v.eventCount, v.events])).toEqual(
      expect.arrayContaining([
        [letter.messageId, 1, expected!.events],
        [broken.messageId, 1, []],
      ]),
    );
    expect(listed).toHaveLength(2);
  });

  it("keeps an account's most recently seen letters up to its cap, and the other accounts' letters", async () => {
    const c = await h.tenant();
    const capped = new DeadLetterIndex(h.db.dataSource, logger, { maxPerAccount: 2 });
    const letters = ['2026-11-24', '2026-11-26', '2026-11-25'].map((day) =>
      deadLetter(c.accountId, { target: aIntegration, at: `${day}T10:00:00.000Z` }),
    );
    for (const letter of letters)
      expect(await capped.index('amplitude', recordOf(letter, (directOffsets += 1)))).toBe('inserted');
    expect((await list(c.key)).data.map((v) => v.lastSeenAt)).toEqual([
      '2026-11-26T10:00:00.000Z',
      '2026-11-25T10:00:00.000Z',
    ]);
    // Account A holds more than 2 letters: the cap of C's index removed none of them.
    expect((await list(a.key, '?limit=100')).pagination.total).toBeGreaterThan(2);
  });

  it('limits replays per account: one more than DEAD_LETTER_REPLAYS_PER_MINUTE answers 429 with Retry-After', async () => {
    const c = await h.tenant();
    // All the calls in one minute's window (at most a 5 s wait).
    await waitUntil('not the last 5 s of a minute', async () => Date.now() % 60_000 < 55_000, 6_000);
    const replay = () => h.as(c.key).post('/api/v1/dead-letters/replay').send({ destination: 'amplitude' });
    const statuses: number[] = [];
    for (let i = 0; i < REPLAYS_PER_MINUTE; i += 1) statuses.push((await replay()).status);
    expect(statuses).toEqual(Array.from({ length: REPLAYS_PER_MINUTE }, () => 200));
    const refused = await replay();
    expect([refused.status, refused.body.code]).toEqual([429, 'dead_letter_replay_rate_limited']);
    const retryAfter = Number(refused.headers['retry-after']);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    // Another account is not held back by C's replays.
    const d = await h.tenant();
    expect(
      (await h.as(d.key).post('/api/v1/dead-letters/replay').send({ destination: 'amplitude' })).status,
    ).toBe(200);
  });

  it("counts replayed events against their write key's second and day in ingestion's counters", async () => {
    const c = await h.tenant();
    const writeKeyId = randomUUID();
    const index = new DeadLetterIndex(h.db.dataSource, logger);
    for (let i = 0; i < 3; i += 1)
      await index.index(
        'amplitude',
        recordOf(deadLetter(c.accountId, { target: aIntegration, writeKeyId }), (directOffsets += 1)),
      );
    const before = Date.now();
    const replayed = await h.as(c.key).post('/api/v1/dead-letters/replay').send({ destination: 'amplitude' });
    expect(replayed.body).toEqual({ replayed: 3, skipped: 0 });
    const [, day] = writeKeyWindowKeys(writeKeyId, before);
    expect(await sharedRedis.get(`${INGESTION_KEY_PREFIX}${day}`)).toBe('3');
    expect(await sharedRedis.ttl(`${INGESTION_KEY_PREFIX}${day}`)).toBeGreaterThan(86_000);
  });

  // Last: the sweep deletes every row of this database past 30 days.
  it('neither lists nor replays a letter past the retention, and the sweep deletes it', async () => {
    const c = await h.tenant();
    const day = 86_400_000;
    const old = deadLetter(c.accountId, {
      target: aIntegration,
      at: new Date(Date.now() - 31 * day).toISOString(),
    });
    const recent = deadLetter(c.accountId, {
      target: aIntegration,
      at: new Date(Date.now() - 29 * day).toISOString(),
    });
    const index = new DeadLetterIndex(h.db.dataSource, logger);
    await index.index('amplitude', recordOf(old, (directOffsets += 1)));
    await index.index('amplitude', recordOf(recent, (directOffsets += 1)));
    const service = new DeadLetterService(h.db.dataSource, replayer);
    const page = await service.list(c.accountId, {}, 'pending', { limit: 20, offset: 0 });
    expect(page.data.map((v) => v.messageIds[0])).toEqual([recent.messageId]);
    expect(await service.replay(c.accountId, { destination: 'amplitude' })).toEqual({
      replayed: 1,
      skipped: 0,
    });

    expect(await new DeadLetterRetention(h.db.dataSource, logger, 30).sweep()).toBeGreaterThanOrEqual(1);
    const left: { n: number }[] = await h.db.dataSource.query(
      'SELECT count(*)::int AS n FROM dead_letters WHERE account_id = $1',
      [c.accountId],
    );
    expect(left).toEqual([{ n: 1 }]);
  });
});
