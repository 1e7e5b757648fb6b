import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { waitFor } from '@pipeline/destinations/testing';
import { collect, event, startHosted, type Hosted } from '../testing/ingestion-harness';

const run = promisify(execFile);

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
    // Conditions, not pauses: the broker stops once the load is being acknowledged, and the
    // load ends once the outage has been answered with 503s.
    try {
      await waitFor(() => (outcomes.get(202) ?? 0) >= 20, 60_000, '20 acknowledged batches');
      await broker('stop');
      await waitFor(() => (outcomes.get(503) ?? 0) >= 8, 60_000, '8 refusals while the broker is down');
    } finally {
      stop = true;
      await load;
    }
    expect([...outcomes.keys()].sort()).toEqual([202, 503]);
    expect(outcomes.get(202)).toBeGreaterThanOrEqual(20);
    expect(outcomes.get(503)).toBeGreaterThanOrEqual(8);

    await broker('start');
    const committed = new Set((await h.readTopic(acknowledged.length)).map((e) => e.event.messageId));
    const lost = acknowledged.filter((id) => !committed.has(id));
    expect({ acknowledged: acknowledged.length, lost }).toEqual({
      acknowledged: acknowledged.length,
      lost: [],
    });
  }, 120_000);
});
