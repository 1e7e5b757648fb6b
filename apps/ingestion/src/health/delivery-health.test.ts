import request from 'supertest';
import { StaticHealth, publicHealth, type HealthReporter } from './delivery-health';
import { IngestionMetrics, metricsHttp } from '../metrics/ingestion-metrics';

// What the public /health keeps of the full report; the hosted suites with a real broker are
// public-health.test.ts.
describe('publicHealth', () => {
  it("keeps the statuses and each kind's verdict, and drops the consumer groups and their lag", () => {
    const report = {
      status: 200,
      body: {
        ok: true,
        durableIngest: true,
        deliveryHealthy: false,
        delivery: {
          amplitude: { groupId: 'delivery.amplitude', lag: 12_345, healthy: false },
          warehouse: { groupId: 'delivery.warehouse', lag: 3, healthy: true },
        },
      },
    };
    expect(publicHealth(report)).toStrictEqual({
      status: 200,
      body: {
        ok: true,
        durableIngest: true,
        deliveryHealthy: false,
        delivery: { amplitude: { healthy: false }, warehouse: { healthy: true } },
      },
    });
    expect(publicHealth({ status: 200, body: { ok: true, durableIngest: false } })).toStrictEqual({
      status: 200,
      body: { ok: true, durableIngest: false },
    });
    // The outbox cannot be read: the load balancer still sees 503.
    expect(
      publicHealth({
        status: 503,
        body: { ok: false, durableIngest: true, deliveryHealthy: false, delivery: {} },
      }),
    ).toStrictEqual({
      status: 503,
      body: { ok: false, durableIngest: true, deliveryHealthy: false, delivery: {} },
    });
  });

  it("the metrics port answers a reporter that throws with 503, and static mode's report as it is", async () => {
    const failing: HealthReporter = { report: () => Promise.reject(new Error('admin client gone')) };
    const failed = await request(metricsHttp(new IngestionMetrics(), failing)).get('/health');
    expect([failed.status, failed.body]).toEqual([503, { ok: false }]);
    const fine = await request(metricsHttp(new IngestionMetrics(), new StaticHealth())).get('/health');
    expect([fine.status, fine.body]).toEqual([200, { ok: true, durableIngest: false }]);
  });
});
