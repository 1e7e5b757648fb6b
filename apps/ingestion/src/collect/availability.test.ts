import { execFile } from 'node:child_process';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { promisify } from 'node:util';
import request from 'supertest';
import { loadConfig } from '@pipeline/config';
import { createKafka, createProducer, kafkaConfigSchema } from '@pipeline/kafka';
import { createLogger } from '@pipeline/logger';
import type { WriteKeyRecord } from '@pipeline/tenancy';
import { createApp } from '../app';
import type { WriteKeyAuthenticator } from '../auth/write-key-authenticator';
import { clientAddressResolver } from './client-address';
import { CollectService } from './collect-service';
import { StaticHealth } from '../health/delivery-health';
import { AuthAttemptLimiter, LocalBackstop, SharedRateLimiter } from '../limits/rate-limits';
import { BatchDedupe } from '../outbox/batch-dedupe';
import { OutboxPublisher } from '../outbox/outbox-publisher';
import { collect, event, startHosted, type Hosted } from '../testing/ingestion-harness';

const run = promisify(execFile);
const logger = createLogger({ service: 'test', stream: new PassThrough() });

describe('hosted mode when dependencies fail (real services)', () => {
  let h: Hosted;
  beforeAll(async () => {
    h = await startHosted('availability');
  });
  afterAll(() => h.close());

  it('answers 503 auth_unavailable for an uncached key while the control plane is down; cached keys keep working', async () => {
    expect((await collect(h.app).set('X-Write-Key', h.openWriteKey).send(event())).status).toBe(202);
    h.controlPlaneServer.closeAllConnections();
    await new Promise((resolve) => h.controlPlaneServer.close(resolve));
    const unknown = await collect(h.app)
      .set('X-Write-Key', h.writeKey)
      .set('Origin', 'https://example.com')
      .send(event());
    expect(unknown.status).toBe(503);
    expect(unknown.body).toEqual({ ok: false, error: 'auth_unavailable', retryAfter: 5 });
    expect(unknown.headers['retry-after']).toBe('5');
    expect((await collect(h.app).set('X-Write-Key', h.openWriteKey).send(event())).status).toBe(202);
    await new Promise<void>((resolve) => h.controlPlaneServer.listen(0, '127.0.0.1', resolve));
  });
});

describe('durable_ingress_unavailable', () => {
  const tenant = (warehouse: WriteKeyRecord['warehouse']): WriteKeyRecord => ({
    accountId: 'a',
    writeKeyId: 'w',
    status: 'active',
    allowedOrigins: [],
    destinations: [],
    warehouse,
  });
  const authenticator = (record: WriteKeyRecord): WriteKeyAuthenticator => ({
    mode: 'hosted',
    authenticate: async () => record,
    isKnownValid: () => true,
  });

  async function appWith(record: WriteKeyRecord, brokers: string) {
    const kafka = createKafka(
      loadConfig(kafkaConfigSchema, { KAFKA_BROKERS: brokers, KAFKA_CONNECTION_TIMEOUT_MS: '300' }),
      { clientId: 't', logger },
    );
    const producer = createProducer(kafka);
    await producer.connect().catch(() => undefined);
    const collectService = new CollectService({
      authenticator: authenticator(record),
      logger,
      hosted: {
        publisher: new OutboxPublisher(producer, { topic: 'test.unavailable', timeoutMs: 3000 }),
        dedupe: new BatchDedupe(null, logger),
        backstop: new LocalBackstop(1000),
        shared: new SharedRateLimiter(null, { eventsPerSecond: 1000, eventsPerDay: 1000 }, logger),
        authAttempts: new AuthAttemptLimiter(null, 1000),
      },
    });
    const app = createApp({
      logger,
      collect: collectService,
      health: new StaticHealth(),
      sdk: null,
      simulate: { demoMode: false, adminSetupEnabled: false, adminToken: undefined },
      clientAddress: clientAddressResolver(undefined),
    });
    return { app, producer };
  }

  it('with reason no_enabled_destination when the key reaches no destination', async () => {
    const { app, producer } = await appWith(tenant(null), process.env.KAFKA_BROKERS || '127.0.0.1:9092');
    const response = await request(app).post('/collect').set('X-Write-Key', 'k').send(event());
    expect(response.status).toBe(503);
    expect(response.body).toEqual({
      ok: false,
      error: 'durable_ingress_unavailable',
      reason: 'no_enabled_destination',
      retryAfter: 60,
    });
    await producer.disconnect();
  });

  it('with reason outbox_unavailable when the batch cannot be committed', async () => {
    const { app } = await appWith(tenant({ kind: 'warehouse', schema: 's' }), '127.0.0.1:1');
    const response = await request(app).post('/collect').set('X-Write-Key', 'k').send(event());
    expect(response.status).toBe(503);
    expect(response.body).toEqual({
      ok: false,
      error: 'durable_ingress_unavailable',
      reason: 'outbox_unavailable',
      retryAfter: 5,
    });
    expect(response.headers['retry-after']).toBe('5');
  });
});

describe('fault test: the broker stops during a load (its own broker)', () => {
  const repo = path.resolve(__dirname, '../../../..');
  const kafkaScript = path.join(repo, 'tools/kafka/kafka.sh');
  const env = {
    ...process.env,
    KAFKA_PORT: '19392',
    KAFKA_CONTROLLER_PORT: '19393',
    KAFKA_STATE_DIR: path.join(repo, '.cache/kafka-fault-test'),
  };
  const broker = (command: string) => run('bash', [kafkaScript, command], { env, timeout: 120_000 });
  let h: Hosted;

  beforeAll(async () => {
    await broker('reset');
    await broker('start');
    h = await startHosted('fault', {
      kafkaBrokers: '127.0.0.1:19392',
      publishTimeoutMs: 3000,
      backstopEps: 1_000_000,
    });
  }, 180_000);
  afterAll(async () => {
    await h?.close().catch(() => undefined);
    await broker('stop');
  }, 60_000);

  it('answers every request 202 or 503 with retryAfter, and every 202 is in the topic afterwards', async () => {
    const acknowledged: string[] = [];
    const outcomes = new Map<number, number>();
    let stop = false;
    const worker = async () => {
      while (!stop) {
        const batch = [event(), event()];
        const response = await collect(h.app).set('X-Write-Key', h.openWriteKey).send({ batch });
        outcomes.set(response.status, (outcomes.get(response.status) ?? 0) + 1);
        if (response.status === 202) acknowledged.push(...batch.map((e) => e.messageId));
        else
          expect(response.body).toMatchObject({
            ok: false,
            error: 'durable_ingress_unavailable',
            reason: 'outbox_unavailable',
            retryAfter: 5,
          });
      }
    };
    const load = Promise.all(Array.from({ length: 8 }, worker));
    await new Promise((resolve) => setTimeout(resolve, 1500));
    await broker('stop');
    await new Promise((resolve) => setTimeout(resolve, 4000));
    stop = true;
    await load;
    expect([...outcomes.keys()].every((status) => status === 202 || status === 503)).toBe(true);
    expect(outcomes.get(202)).toBeGreaterThan(0);
    expect(outcomes.get(503)).toBeGreaterThan(0);

    await broker('start');
    const committed = new Set((await h.readTopic(acknowledged.length)).map((e) => e.event.messageId));
    const lost = acknowledged.filter((id) => !committed.has(id));
    expect({ acknowledged: acknowledged.length, lost }).toEqual({
      acknowledged: acknowledged.length,
      lost: [],
    });
  }, 120_000);
});
