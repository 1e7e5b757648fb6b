import { randomUUID } from 'node:crypto';
import { PassThrough } from 'node:stream';
import request from 'supertest';
import { loadConfig } from '@pipeline/config';
import {
  DeliveryMetrics,
  runConsumer,
  type DeliveryMessage,
  type DeliveryReport,
  type Destination,
} from '@pipeline/destinations';
import { createKafka, ensureTopics, kafkaConfigSchema } from '@pipeline/kafka';
import { createLogger } from '@pipeline/logger';
import { deliveryHttp } from './delivery-http';

const logger = createLogger({ service: 'delivery-probes-test', stream: new PassThrough() });
const kafka = createKafka(loadConfig(kafkaConfigSchema, process.env), {
  clientId: 'delivery-probes-test',
  logger,
});

class NothingDestination implements Destination {
  readonly kind = 'log';
  async deliver(messages: readonly DeliveryMessage[]): Promise<DeliveryReport> {
    return { delivered: messages.length, consentSkipped: 0, failed: [] };
  }
}

describe('a consumer’s probes with its consumer on the real broker', () => {
  it('/readyz is 200 once the consumers joined and 503 after they stopped; /livez 200 throughout', async () => {
    const id = randomUUID();
    const topics = {
      source: `test.probes.${id}`,
      retry: `test.probes.${id}.retry`,
      deadLetter: `test.probes.${id}.dlq`,
    };
    await ensureTopics(
      kafka,
      Object.values(topics).map((topic) => ({ topic, numPartitions: 1 })),
      {
        replicationFactor: 1,
        logger,
      },
    );
    const running = await runConsumer({
      kafka,
      destination: new NothingDestination(),
      topics,
      groupId: `test-probes-${id}`,
      logger,
      maxWaitTimeInMs: 100,
    });
    const app = deliveryHttp(new DeliveryMetrics(), { destination: 'log', running: () => running.running() });
    try {
      await running.joined;
      const ready = await request(app).get('/readyz');
      expect([ready.status, ready.body]).toEqual([200, { ok: true, checks: { consumer: 'up' } }]);
      expect((await request(app).get('/livez')).status).toBe(200);
    } finally {
      await running.stop();
    }
    const stopped = await request(app).get('/readyz');
    expect([stopped.status, stopped.body]).toEqual([
      503,
      { ok: false, checks: { consumer: 'down' }, failing: ['consumer'] },
    ]);
    const live = await request(app).get('/livez');
    expect([live.status, live.body]).toEqual([200, { ok: true }]);
    const admin = kafka.admin();
    await admin.connect();
    await admin.deleteTopics({ topics: Object.values(topics) }).catch(() => undefined);
    await admin.disconnect();
  }, 60_000);
});
