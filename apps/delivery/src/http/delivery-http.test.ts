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

describe('a consumer process’s probes', () => {
  const metrics = new DeliveryMetrics();

  it('/readyz is 503 naming the consumer before it joined and after it stopped; /livez stays 200', async () => {
    let running = false;
    const app = deliveryHttp(metrics, { destination: 'log', running: () => running });
    const notJoined = await request(app).get('/readyz');
    expect(notJoined.status).toBe(503);
    expect(notJoined.body).toEqual({ ok: false, checks: { consumer: 'down' }, failing: ['consumer'] });
    expect((await request(app).get('/livez')).status).toBe(200);

    running = true;
    const ready = await request(app).get('/readyz');
    expect(ready.status).toBe(200);
    expect(ready.body).toEqual({ ok: true, checks: { consumer: 'up' } });

    running = false;
    expect((await request(app).get('/readyz')).status).toBe(503);
    const live = await request(app).get('/livez');
    expect(live.status).toBe(200);
    expect(live.body).toEqual({ ok: true });
  });
});
