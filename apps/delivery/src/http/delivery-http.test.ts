import request from 'supertest';
import { DeliveryMetrics } from '@pipeline/destinations';
import { deliveryHttp } from './delivery-http';

describe('a consumer process’s /health', () => {
  const metrics = new DeliveryMetrics();

  it('is 200 while the consumer runs, and says since when its destination is unavailable', async () => {
    const since = new Date('2026-11-23T10:00:00.000Z');
    const app = deliveryHttp(metrics, {
      destination: 'warehouse',
      running: () => true,
      unavailableSince: () => since,
    });
    const response = await request(app).get('/health');
    expect(response.status).toBe(200);
    expect(response.body).toEqual({
      ok: true,
      destination: 'warehouse',
      destinationUnavailableSince: '2026-11-23T10:00:00.000Z',
    });
  });

  it('is 503 while the consumer is not running (not joined, restarting, or stopped by a fatal error)', async () => {
    let running = true;
    const app = deliveryHttp(metrics, { destination: 'amplitude', running: () => running });
    expect((await request(app).get('/health')).status).toBe(200);
    running = false;
    const response = await request(app).get('/health');
    expect(response.status).toBe(503);
    expect(response.body).toEqual({ ok: false, destination: 'amplitude' });
  });
});
