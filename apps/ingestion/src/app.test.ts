import { PassThrough } from 'node:stream';
import request from 'supertest';
import { loadConfig } from '@pipeline/config';
import { createKafka, KafkaHealthProbe, kafkaConfigSchema } from '@pipeline/kafka';
import { createLogger } from '@pipeline/logger';
import { createApp } from './app';

const logger = createLogger({ service: 'ingestion-test', stream: new PassThrough() });

describe('ingestion HTTP', () => {
  it('GET /health answers 200 with the real broker reachable', async () => {
    const kafka = createKafka(loadConfig(kafkaConfigSchema, process.env), {
      clientId: 'ingestion-test',
      logger,
    });
    const response = await request(createApp({ logger, outbox: new KafkaHealthProbe(kafka) })).get('/health');
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ ok: true, outbox: 'up' });
  });

  it('GET /health answers 503 with ok:false when the outbox cannot be reached', async () => {
    const kafka = createKafka(
      loadConfig(kafkaConfigSchema, { KAFKA_BROKERS: '127.0.0.1:1', KAFKA_CONNECTION_TIMEOUT_MS: '200' }),
      {
        clientId: 'ingestion-test',
        logger,
      },
    );
    const response = await request(
      createApp({ logger, outbox: new KafkaHealthProbe(kafka, { timeoutMs: 500 }) }),
    ).get('/health');
    expect(response.status).toBe(503);
    expect(response.body).toEqual({ ok: false, outbox: 'down' });
  });

  it('answers unknown routes with the ingestion error body', async () => {
    const response = await request(createApp({ logger, outbox: { reachable: async () => true } })).get(
      '/nope',
    );
    expect(response.status).toBe(404);
    expect(response.body).toEqual({ ok: false, error: 'not_found' });
  });

  it('turns an unexpected failure into 500 server_error without internals', async () => {
    const app = createApp({
      logger,
      outbox: {
        reachable: async () => {
          throw new Error('secret internals at /srv/app.js:1');
        },
      },
    });
    const response = await request(app).get('/health');
    expect(response.status).toBe(500);
    expect(response.body).toEqual({ ok: false, error: 'server_error' });
  });
});
