import { PassThrough } from 'node:stream';
import request from 'supertest';
import { loadConfig } from '@pipeline/config';
import { createKafka, createProducer, kafkaConfigSchema } from '@pipeline/kafka';
import { createLogger } from '@pipeline/logger';
import type { WriteKeyRecord } from '@pipeline/tenancy';
import { clientAddressResolver } from '@pipeline/tenancy';
import { createApp } from '../app';
import type { WriteKeyAuthenticator } from '../auth/write-key-authenticator';
import { StaticHealth } from '../health/delivery-health';
import { AuthAttemptLimiter, LocalBackstop, SharedRateLimiter } from '../limits/rate-limits';
import { BatchDedupe } from '../outbox/batch-dedupe';
import { OutboxPublisher } from '../outbox/outbox-publisher';
import { event } from '../testing/ingestion-harness';
import { CollectService } from './collect-service';

const logger = createLogger({ service: 'test', stream: new PassThrough() });

// Not a real-services test: the authenticator is a stub and there is no Redis, so that the
// refusal bodies can be checked for a tenant the control plane never hands out (it gives every
// account a warehouse, so no_enabled_destination cannot come from it) and for a broker that
// cannot be reached at all. The real-services answers are in availability.test.ts.
describe('durable_ingress_unavailable bodies (stub authenticator, no Redis)', () => {
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

  async function appWith(record: WriteKeyRecord, brokers: string, broker: 'reachable' | 'unreachable') {
    const kafka = createKafka(
      loadConfig(kafkaConfigSchema, { KAFKA_BROKERS: brokers, KAFKA_CONNECTION_TIMEOUT_MS: '300' }),
      { clientId: 't', logger },
    );
    const producer = createProducer(kafka);
    if (broker === 'reachable') await producer.connect();
    else await expect(producer.connect()).rejects.toThrow(/ECONNREFUSED|Connection error/);
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
    const { app, producer } = await appWith(
      tenant(null),
      process.env.KAFKA_BROKERS || '127.0.0.1:9092',
      'reachable',
    );
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
    const { app, producer } = await appWith(
      tenant({ kind: 'warehouse', warehouseId: 'w', engine: 'postgres', schema: 's', epoch: 1 }),
      '127.0.0.1:1',
      'unreachable',
    );
    const response = await request(app).post('/collect').set('X-Write-Key', 'k').send(event());
    expect(response.status).toBe(503);
    expect(response.body).toEqual({
      ok: false,
      error: 'durable_ingress_unavailable',
      reason: 'outbox_unavailable',
      retryAfter: 5,
    });
    expect(response.headers['retry-after']).toBe('5');
    await producer.disconnect();
  });
});
