import request from 'supertest';
import { collect, event, startHosted, type Hosted } from '../testing/ingestion-harness';

/** Sends three events, then puts the `log` kind's group at the start of the topic: it lags by every record. */
async function lagByEveryRecord(h: Hosted): Promise<number> {
  for (let i = 0; i < 3; i += 1)
    expect((await collect(h.app).set('X-Write-Key', h.openWriteKey).send(event())).status).toBe(202);
  const admin = h.kafka.admin();
  await admin.connect();
  const offsets = await admin.fetchTopicOffsets(h.topic);
  await admin.setOffsets({
    groupId: h.healthGroup,
    topic: h.topic,
    partitions: offsets.map((p) => ({ partition: p.partition, offset: p.low })),
  });
  await admin.disconnect();
  const records = offsets.reduce((sum, p) => sum + Number(p.high) - Number(p.low), 0);
  expect(records).toBeGreaterThanOrEqual(3);
  return records;
}

describe('GET /health, hosted mode: statuses on the public port, groups and lag on the metrics port', () => {
  let h: Hosted;
  beforeAll(async () => {
    h = await startHosted('public health');
  });
  afterAll(() => h.close());

  it('shows a lagging consumer group only on the metrics port', async () => {
    const records = await lagByEveryRecord(h);

    const open = await request(h.app).get('/health');
    expect(open.status).toBe(200);
    expect(open.body).toEqual({
      ok: true,
      durableIngest: true,
      deliveryHealthy: true,
      delivery: { log: { healthy: true } },
    });
    expect(open.text).not.toContain(h.healthGroup);
    expect(open.text).not.toMatch(/lag|groupId/);

    const internal = await request(h.metricsApp).get('/health');
    expect(internal.status).toBe(200);
    expect(internal.body).toEqual({
      ok: true,
      durableIngest: true,
      deliveryHealthy: true,
      delivery: { log: { groupId: h.healthGroup, lag: records, healthy: true } },
    });
  });
});

describe('GET /health, hosted mode: a kind behind DELIVERY_LAG_UNHEALTHY', () => {
  let h: Hosted;
  beforeAll(async () => {
    h = await startHosted('public health, lagging', { deliveryLagUnhealthy: 2 });
  });
  afterAll(() => h.close());

  it('is unhealthy in public by kind, with its lag only on the metrics port', async () => {
    const records = await lagByEveryRecord(h);
    const open = await request(h.app).get('/health');
    expect([open.status, open.body]).toEqual([
      200,
      { ok: true, durableIngest: true, deliveryHealthy: false, delivery: { log: { healthy: false } } },
    ]);
    const internal = await request(h.metricsApp).get('/health');
    expect(internal.body).toEqual({
      ok: true,
      durableIngest: true,
      deliveryHealthy: false,
      delivery: { log: { groupId: h.healthGroup, lag: records, healthy: false } },
    });
  });
});
