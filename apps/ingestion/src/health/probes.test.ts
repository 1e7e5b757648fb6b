import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import request from 'supertest';
import { collect, event, startHosted, type Hosted } from '../testing/ingestion-harness';

const run = promisify(execFile);

describe('GET /livez and /readyz, hosted mode, while its own broker stops and starts', () => {
  const repo = path.resolve(__dirname, '../../../..');
  const kafkaScript = path.join(repo, 'tools/kafka/kafka.sh');
  const env = {
    ...process.env,
    KAFKA_PORT: '19492',
    KAFKA_CONTROLLER_PORT: '19493',
    KAFKA_STATE_DIR: path.join(repo, '.cache/kafka-probe-test'),
  };
  const broker = (command: string) => run('bash', [kafkaScript, command], { env, timeout: 120_000 });
  let h: Hosted;

  beforeAll(async () => {
    await broker('reset');
    await broker('start');
    h = await startHosted('probes', { kafkaBrokers: '127.0.0.1:19492', publishTimeoutMs: 3000 });
  }, 180_000);
  afterAll(async () => {
    await h?.close().catch(() => undefined);
    await broker('stop');
  }, 60_000);

  /** Polls GET /readyz until it answers `status`; the last answer. */
  const readyzUntil = async (status: number, boundMs: number) => {
    const deadline = Date.now() + boundMs;
    for (;;) {
      const response = await request(h.app).get('/readyz');
      if (response.status === status || Date.now() > deadline) return response;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  };

  it('/readyz follows the broker, /livez does not; lines of a failed request carry its id', async () => {
    const live = await request(h.app).get('/livez');
    expect(live.status).toBe(200);
    expect(live.body).toEqual({ ok: true });
    const ready = await request(h.app).get('/readyz');
    expect(ready.status).toBe(200);
    expect(ready.body).toEqual({ ok: true, checks: { kafka: 'up' } });

    await broker('stop');
    const down = await readyzUntil(503, 15_000);
    expect(down.status).toBe(503);
    expect(down.body).toEqual({ ok: false, checks: { kafka: 'down' }, failing: ['kafka'] });
    expect((await request(h.app).get('/livez')).status).toBe(200);

    // A batch now cannot be committed: every line logged while handling it names its request.
    const refused = await collect(h.app)
      .set('X-Write-Key', h.openWriteKey)
      .set('X-Request-Id', 'probe-test-1')
      .send(event());
    expect(refused.status).toBe(503);
    expect(refused.body).toMatchObject({
      error: 'durable_ingress_unavailable',
      reason: 'outbox_unavailable',
    });
    const lines = h.logs
      .flatMap((chunk) => chunk.split('\n'))
      .filter(Boolean)
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    const publishFailed = lines.filter((l) => l.message === 'outbox publish failed');
    const accessLine = lines.filter((l) => l.message === 'request completed' && l.path === '/collect');
    expect(publishFailed.map((l) => l.requestId)).toEqual(['probe-test-1']);
    expect(accessLine.map((l) => [l.requestId, l.level])).toEqual([['probe-test-1', 'info']]);
    // The failed send served a group of requests: its own lines (kafkajs's) name none of them.
    expect(lines.filter((l) => l.requestId === 'probe-test-1').map((l) => l.message)).toEqual([
      'outbox publish failed',
      'request completed',
    ]);

    await broker('start');
    const back = await readyzUntil(200, 60_000);
    expect(back.status).toBe(200);
    expect(back.body).toEqual({ ok: true, checks: { kafka: 'up' } });
  }, 180_000);
});
