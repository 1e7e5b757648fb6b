import type { RequestListener } from 'node:http';
import type { DeliveryMetrics } from '@pipeline/destinations';

export interface DeliveryHealth {
  destination: string;
  /** True once the consumers joined their groups. */
  joined(): boolean;
}

/**
 * A consumer process's own endpoints: GET /metrics (Prometheus text: delivered, retried,
 * dead-lettered and consent-skipped counts, lag of its groups) and GET /health (200 once its
 * consumers joined their groups, 503 before).
 */
export function deliveryHttp(metrics: DeliveryMetrics, health: DeliveryHealth): RequestListener {
  return (req, res) => {
    const path = (req.url ?? '').split('?')[0];
    const send = (status: number, type: string, body: string) => {
      res.writeHead(status, { 'content-type': type, 'content-length': Buffer.byteLength(body) }).end(body);
    };
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      send(405, 'application/json', JSON.stringify({ ok: false, error: 'method_not_allowed' }));
      return;
    }
    if (path === '/health') {
      const joined = health.joined();
      send(
        joined ? 200 : 503,
        'application/json',
        JSON.stringify({ ok: joined, destination: health.destination }),
      );
      return;
    }
    if (path === '/metrics') {
      metrics.text().then(
        (text) => send(200, metrics.contentType, text),
        (error: unknown) =>
          send(
            503,
            'application/json',
            JSON.stringify({ ok: false, error: 'metrics_unavailable', reason: String(error) }),
          ),
      );
      return;
    }
    send(404, 'application/json', JSON.stringify({ ok: false, error: 'not_found' }));
  };
}
