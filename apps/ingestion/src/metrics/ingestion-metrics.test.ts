import request from 'supertest';
import { collect, event, startHosted, type Hosted } from '../testing/ingestion-harness';

/** Prometheus text as `name{label="value",...}` (labels sorted) -> value. */
function parse(text: string): Map<string, number> {
  const samples = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match) throw new Error(`not a sample line: ${line}`);
    const labels = [...(match[2] ?? '').matchAll(/([a-zA-Z_]\w*)="((?:[^"\\]|\\.)*)"/g)]
      .map(([, name, value]) => `${name}="${value}"`)
      .sort();
    samples.set(`${match[1]}{${labels.join(',')}}`, Number(match[3]));
  }
  return samples;
}

describe('GET /metrics on the metrics port, after real traffic (Kafka, Redis, PostgreSQL, control plane)', () => {
  let h: Hosted;
  beforeAll(async () => {
    // 25 events per second per key and instance: a batch of 30 is refused with limitType second.
    h = await startHosted('metrics', { backstopEps: 25 });
  });
  afterAll(() => h.close());

  const scrape = async () => {
    const response = await request(h.metricsApp).get('/metrics');
    expect(response.status).toBe(200);
    expect(response.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    return parse(response.text);
  };

  it('moves each series by exactly what was sent', async () => {
    const before = await scrape();
    const origin = 'https://shop.example.com';
    const statuses: number[] = [];
    const send = async (req: request.Test) => {
      const response = await req;
      statuses.push(response.status);
      return response;
    };

    // 3 events accepted and published (openWriteKey: a cache miss).
    const batch = { batch: [event(), event(), event()] };
    expect((await send(collect(h.app).set('X-Write-Key', h.openWriteKey).send(batch))).status).toBe(202);
    // The same batch again: a dedupe hit, acknowledged (3 accepted), not published (a cache hit).
    const again = await send(collect(h.app).set('X-Write-Key', h.openWriteKey).send(batch));
    expect(again.body).toMatchObject({ deduplicated: true });
    // 2 valid and 1 invalid event: 2 accepted, 1 rejected invalid_event (a cache hit).
    const partial = { batch: [event(), { ...event(), event: undefined }, event()] };
    expect((await send(collect(h.app).set('X-Write-Key', h.openWriteKey).send(partial))).body).toMatchObject({
      received: 3,
      invalid: 1,
    });
    // An unknown key with 2 events: 401 before the body is read, so 1 rejected
    // invalid_write_key (a cache miss).
    const unknown = await send(
      collect(h.app)
        .set('X-Write-Key', 'wk_not_a_key_anyone_has')
        .send({ batch: [event(), event()] }),
    );
    expect(unknown.body).toEqual({ ok: false, error: 'invalid_write_key' });
    // A body that is not JSON: 400, one rejected invalid_payload (its key, in a header, is
    // checked before the body is parsed: a cache hit).
    expect((await send(collect(h.app).set('X-Write-Key', h.openWriteKey).send('{"type":'))).status).toBe(400);
    // 30 events over the 25/s backstop: 429 second, 30 rejected rate_limit_exceeded (writeKey: a miss).
    const limited = await send(
      collect(h.app)
        .set('X-Write-Key', h.writeKey)
        .set('Origin', origin)
        .send({ batch: Array.from({ length: 30 }, () => event()) }),
    );
    expect(limited.body).toMatchObject({ error: 'rate_limit_exceeded', limitType: 'second' });
    // Segment's /v1/batch: 2 events accepted and published (a cache hit).
    const segment = await request(h.app)
      .post('/v1/batch')
      .auth(h.openWriteKey, '')
      .send({ batch: [event(), event()] });
    expect(segment.status).toBe(200);
    // Express routes: a probe and a 404.
    expect((await request(h.app).get('/livez')).status).toBe(200);
    expect((await request(h.app).get('/metrics')).status).toBe(404);
    expect(statuses).toEqual([202, 202, 202, 401, 400, 429]);

    const expected: Record<string, number> = {
      'pipeline_ingestion_http_requests_total{route="/collect",status="202"}': 3,
      'pipeline_ingestion_http_requests_total{route="/collect",status="401"}': 1,
      'pipeline_ingestion_http_requests_total{route="/collect",status="400"}': 1,
      'pipeline_ingestion_http_requests_total{route="/collect",status="429"}': 1,
      'pipeline_ingestion_http_requests_total{route="/v1/batch",status="200"}': 1,
      'pipeline_ingestion_http_requests_total{route="/livez",status="200"}': 1,
      'pipeline_ingestion_http_requests_total{route="unmatched",status="404"}': 1,
      'pipeline_ingestion_events_total{code="",outcome="accepted"}': 3 + 3 + 2 + 2,
      'pipeline_ingestion_events_total{code="invalid_event",outcome="rejected"}': 1,
      'pipeline_ingestion_events_total{code="invalid_write_key",outcome="rejected"}': 1,
      'pipeline_ingestion_events_total{code="invalid_payload",outcome="rejected"}': 1,
      'pipeline_ingestion_events_total{code="rate_limit_exceeded",outcome="rejected"}': 30,
      'pipeline_ingestion_dedupe_hits_total{}': 1,
      'pipeline_ingestion_rate_limited_total{limit_type="second"}': 1,
      'pipeline_ingestion_write_key_cache_total{result="miss"}': 3,
      'pipeline_ingestion_write_key_cache_total{result="hit"}': 4,
      'pipeline_ingestion_write_key_cache_total{result="stale"}': 0,
      // Published: the first batch, the partial one and Segment's.
      'pipeline_ingestion_publish_duration_seconds_count{}': 3,
    };
    // Counted when the response is finished, which the client may see first: wait, bounded.
    const deadline = Date.now() + 5000;
    let after = await scrape();
    const delta = (key: string) => (after.get(key) ?? 0) - (before.get(key) ?? 0);
    while (delta('pipeline_ingestion_http_requests_total{route="unmatched",status="404"}') < 1) {
      if (Date.now() > deadline) break;
      await new Promise((resolve) => setTimeout(resolve, 20));
      after = await scrape();
    }
    expect(Object.fromEntries(Object.keys(expected).map((key) => [key, delta(key)]))).toEqual(expected);
    // Nothing else moved in these families (no other route, status or code).
    for (const key of after.keys()) {
      if (/^pipeline_ingestion_(http_requests|events|rate_limited|write_key_cache)_total/.test(key))
        expect([key, delta(key)]).toEqual([key, expected[key] ?? 0]);
    }
    // Exported from the start, at 0 until counted.
    for (const key of [
      'pipeline_ingestion_rate_limited_total{limit_type="day"}',
      'pipeline_ingestion_rate_limited_total{limit_type="auth_resolution"}',
      'pipeline_ingestion_write_key_cache_total{result="stale"}',
    ])
      expect([key, before.get(key)]).toEqual([key, 0]);
    // Every request settled: nothing waits in the outbox publisher.
    expect(after.get('pipeline_ingestion_outbox_pending_records{}')).toBe(0);
    expect(after.get('pipeline_ingestion_outbox_pending_requests{}')).toBe(0);
    // The histogram's buckets are cumulative up to +Inf = count.
    expect(after.get('pipeline_ingestion_publish_duration_seconds_bucket{le="+Inf"}')).toBe(
      after.get('pipeline_ingestion_publish_duration_seconds_count{}'),
    );
    // Node's default process metrics, unprefixed.
    expect(after.has('process_cpu_user_seconds_total{}')).toBe(true);
    expect(after.has('nodejs_eventloop_lag_seconds{}')).toBe(true);
  });

  it('counts records and requests waiting in the outbox publisher while their sends are in flight', async () => {
    const responses = Promise.all(
      Array.from({ length: 4 }, () =>
        collect(h.app)
          .set('X-Write-Key', h.openWriteKey)
          .send({ batch: [event(), event()] }),
      ),
    );
    // The registry's text, as a scrape reads it, while the sends are under way (bounded).
    let seen = { records: 0, requests: 0 };
    const deadline = Date.now() + 5000;
    while (seen.requests === 0 && Date.now() < deadline) {
      await new Promise((resolve) => setImmediate(resolve));
      const samples = parse(await h.metrics.text());
      seen = {
        records: samples.get('pipeline_ingestion_outbox_pending_records{}') ?? 0,
        requests: samples.get('pipeline_ingestion_outbox_pending_requests{}') ?? 0,
      };
    }
    expect(seen.requests).toBeGreaterThan(0);
    // Each request carries one record (2 events in one envelope).
    expect(seen.records).toBe(seen.requests);
    expect((await responses).map((r) => r.status)).toEqual([202, 202, 202, 202]);
    const after = await scrape();
    expect(after.get('pipeline_ingestion_outbox_pending_records{}')).toBe(0);
    expect(after.get('pipeline_ingestion_outbox_pending_requests{}')).toBe(0);
  });
});
