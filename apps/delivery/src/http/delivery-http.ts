import type { RequestListener } from 'node:http';
import type { DeliveryMetrics } from '@pipeline/destinations';
import { livenessAnswer } from '@pipeline/lifecycle';

export interface DeliveryHealth {
  destination: string;
  /** True while the consumers are members of their groups and no fatal error stopped them. */
  running(): boolean;
  /** Since when the destination has been unavailable (a batch waiting for it), if it is. */
  unavailableSince?(): Date | undefined;
}

/**
 * A consumer process's own endpoints: GET /metrics (Prometheus text: delivered, retried,
 * dead-lettered and consent-skipped counts, lag of its groups), GET /health (200 once its
 * consumers joined their groups, 503 before), and the probes: GET /livez (200 while the process
 * answers) and GET /readyz (200 while its consumer runs, 503 naming the `consumer` check
 * otherwise).
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
      // 503 while the consumer is not running: before it joined, while kafkajs restarts it,
      // and after a fatal error until the process has exited.
      const running = health.running();
      const unavailableSince = health.unavailableSince?.();
      send(
        running ? 200 : 503,
        'application/json',
        JSON.stringify({
          ok: running,
          destination: health.destination,
          ...(unavailableSince ? { destinationUnavailableSince: unavailableSince.toISOString() } : {}),
        }),
      );
      return;
    }
    if (path === '/livez') {
      send(livenessAnswer.status, 'application/json', JSON.stringify(livenessAnswer.body));
      return;
    }
    if (path === '/readyz') {
      const running = health.running();
      const body = running
        ? { ok: true, checks: { consumer: 'up' } }
        : { ok: false, checks: { consumer: 'down' }, failing: ['consumer'] };
      send(running ? 200 : 503, 'application/json', JSON.stringify(body));
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
