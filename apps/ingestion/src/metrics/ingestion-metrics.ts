import type { RequestListener } from 'node:http';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { LimitType } from '../collect/ingestion-errors';
import type { HealthReporter } from '../health/delivery-health';

export type WriteKeyCacheResult = 'hit' | 'miss' | 'stale';

/** What a request's events came to, for pipeline_ingestion_events_total. */
export const INVALID_EVENT = 'invalid_event';

/** The labelled children of a counter, made once per label value: the hot path skips prom-client's label hashing. */
function children<L extends string>(
  counter: Counter<L>,
  label: (value: string) => Partial<Record<L, string>>,
) {
  const made = new Map<string, Counter.Internal>();
  return (value: string): Counter.Internal => {
    let child = made.get(value);
    if (!child) {
      child = counter.labels(label(value));
      made.set(value, child);
    }
    return child;
  };
}

/**
 * Ingestion's Prometheus metrics (docs/operations.md, "What to watch"), on their own registry:
 * requests by route template and status, events accepted and rejected by error code, request
 * to Kafka acknowledgement, what waits in the outbox publisher, dedupe hits, rate-limit
 * refusals and the write-key cache. Served on METRICS_PORT (metricsHttp), never on the public port.
 */
export class IngestionMetrics {
  readonly registry = new Registry();
  private readonly request: (routeAndStatus: string) => Counter.Internal;
  private readonly accepted: Counter.Internal;
  private readonly rejected: (code: string) => Counter.Internal;
  private readonly publishDuration: Histogram;
  private readonly dedupeHits: Counter;
  private readonly suppressed: Counter;
  private readonly violations: (code: string) => Counter.Internal;
  private readonly unavailablePlans: Counter;
  private readonly planCompile: Histogram;
  private readonly limited: (limitType: string) => Counter.Internal;
  private readonly cache: Record<WriteKeyCacheResult, Counter.Internal>;
  private outbox: () => { records: number; requests: number } = () => ({ records: 0, requests: 0 });
  private debuggerStats: () => { recorded: number; sampledOut: number; failed: number } = () => ({
    recorded: 0,
    sampledOut: 0,
    failed: 0,
  });

  private violationCountStats: () => { recorded: number; failed: number } = () => ({
    recorded: 0,
    failed: 0,
  });

  constructor(options: { defaultMetrics?: boolean } = {}) {
    const registers = [this.registry];
    if (options.defaultMetrics) collectDefaultMetrics({ register: this.registry });
    const requests = new Counter({
      name: 'pipeline_ingestion_http_requests_total',
      help: 'HTTP requests answered, by route template (`unmatched` for 404s, `preflight` for CORS preflights) and status.',
      labelNames: ['route', 'status'],
      registers,
    });
    this.request = children(requests, (key) => {
      const space = key.lastIndexOf(' ');
      return { route: key.slice(0, space), status: key.slice(space + 1) };
    });
    const events = new Counter({
      name: 'pipeline_ingestion_events_total',
      help: 'Events of /collect and the Segment API routes: accepted (acknowledged, deduplicated retries included), or rejected with the error code of the refused request, or `invalid_event` for the refused events of an accepted batch. A request refused before its events could be read counts as one.',
      labelNames: ['outcome', 'code'],
      registers,
    });
    this.accepted = events.labels({ outcome: 'accepted', code: '' });
    // Series exported at 0 from the start, so that rates and alerts see them before the first event.
    events.inc({ outcome: 'accepted', code: '' }, 0);
    this.rejected = children(events, (code) => ({ outcome: 'rejected', code }));
    this.publishDuration = new Histogram({
      name: 'pipeline_ingestion_publish_duration_seconds',
      help: 'From a request received to its records acknowledged by Kafka (acks=-1), for requests whose records were published.',
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    });
    const pending = () => this.outbox();
    new Gauge({
      name: 'pipeline_ingestion_outbox_pending_records',
      help: 'Records handed to the outbox publisher and not yet acknowledged or failed (queued and in flight).',
      registers,
      collect() {
        this.set(pending().records);
      },
    });
    new Gauge({
      name: 'pipeline_ingestion_outbox_pending_requests',
      help: 'Requests waiting for the outbox publisher to acknowledge their records.',
      registers,
      collect() {
        this.set(pending().requests);
      },
    });
    this.dedupeHits = new Counter({
      name: 'pipeline_ingestion_dedupe_hits_total',
      help: 'Batches acknowledged again without a publish: a retry of a batch committed in the last 24 hours.',
      registers,
    });
    this.suppressed = new Counter({
      name: 'pipeline_ingestion_events_suppressed_total',
      help: "Events of accepted requests that were not committed because a privacy regulation names their subject (suppressed, or received before a deletion's cut-off); they count as accepted in pipeline_ingestion_events_total.",
      registers,
    });
    const violations = new Counter({
      name: 'pipeline_ingestion_plan_violations_total',
      help: 'Tracking-plan violations of the events committed, by code (docs/tracking-plans.md): unplanned_event, unplanned_property, missing_required, type_mismatch, value_not_allowed, common_schema, unknown_pinned_version. The answer to the client never changes.',
      labelNames: ['code'],
      registers,
    });
    this.violations = children(violations, (code) => ({ code }));
    this.unavailablePlans = new Counter({
      name: 'pipeline_ingestion_plan_unavailable_total',
      help: 'Events of write keys binding a tracking plan that were committed unchecked because the plan version could not be read (flagged plan_unavailable: verdict version null).',
      registers,
    });
    this.planCompile = new Histogram({
      name: 'pipeline_ingestion_plan_compile_duration_seconds',
      help: "Time to compile one schema of a tracking plan (a rule's, or the common one), on the first event that needs it: the event loop is held meanwhile.",
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25],
      registers,
    });
    const limited = new Counter({
      name: 'pipeline_ingestion_rate_limited_total',
      help: 'Requests refused with 429, by limit: second, day (per write key) or auth_resolution (per client IP).',
      labelNames: ['limit_type'],
      registers,
    });
    this.limited = children(limited, (limit_type) => ({ limit_type }));
    for (const limit_type of ['second', 'day', 'auth_resolution'] satisfies LimitType[])
      limited.inc({ limit_type }, 0);
    const cache = new Counter({
      name: 'pipeline_ingestion_write_key_cache_total',
      help: 'Write-key checks: hit (cached), miss (asked the control plane), stale (the control plane failed; a cached tenant past its TTL was used).',
      labelNames: ['result'],
      registers,
    });
    this.cache = {
      hit: cache.labels({ result: 'hit' }),
      miss: cache.labels({ result: 'miss' }),
      stale: cache.labels({ result: 'stale' }),
    };
    for (const result of ['hit', 'miss', 'stale']) cache.inc({ result }, 0);
    const debugStats = () => this.debuggerStats();
    // The recorder counts in plain numbers (its hot path skips prom-client); a scrape adds what
    // they grew by since the last one.
    const counted = { recorded: 0, sampledOut: 0, failed: 0 };
    new Counter({
      name: 'pipeline_ingestion_debugger_events_total',
      help: 'Events of the live debugger: recorded (written to Redis), sampled_out (over DEBUGGER_MAX_EVENTS_PER_SECOND for their write key), failed (Redis unavailable or the write failed).',
      labelNames: ['result'],
      registers,
      collect() {
        const stats = debugStats();
        for (const [field, result] of [
          ['recorded', 'recorded'],
          ['sampledOut', 'sampled_out'],
          ['failed', 'failed'],
        ] as const) {
          const grown = stats[field] - counted[field];
          if (grown > 0) this.inc({ result }, grown);
          else this.inc({ result }, 0);
          counted[field] = Math.max(counted[field], stats[field]);
        }
      },
    });
    const ledgerStats = () => this.violationCountStats();
    const ledgerCounted = { recorded: 0, failed: 0 };
    new Counter({
      name: 'pipeline_ingestion_violation_counts_total',
      help: 'Tracking-plan violations for the violations API and alerts: recorded (counted in Redis), failed (Redis unavailable or the write failed; the events keep their verdicts).',
      labelNames: ['result'],
      registers,
      collect() {
        const stats = ledgerStats();
        for (const result of ['recorded', 'failed'] as const) {
          this.inc({ result }, Math.max(0, stats[result] - ledgerCounted[result]));
          ledgerCounted[result] = Math.max(ledgerCounted[result], stats[result]);
        }
      },
    });
  }

  /** Where the violation ledger's counters are read from, at scrape time. */
  watchViolationCounts(stats: () => { recorded: number; failed: number }): void {
    this.violationCountStats = stats;
  }

  /** Where the debugger counters are read from, at scrape time. */
  watchDebugger(stats: () => { recorded: number; sampledOut: number; failed: number }): void {
    this.debuggerStats = stats;
  }

  /** One answered request; `route` is its template. */
  answered(route: string, status: number): void {
    this.request(`${route} ${status}`).inc();
  }

  eventsAccepted(count: number): void {
    if (count > 0) this.accepted.inc(count);
  }

  eventsRejected(code: string, count: number): void {
    if (count > 0) this.rejected(code).inc(count);
  }

  /** `startedAt`: performance.now() when the request was received. */
  published(startedAt: number): void {
    this.publishDuration.observe((performance.now() - startedAt) / 1000);
  }

  /** Events answered as accepted and not committed: a privacy regulation names their subject. */
  eventsSuppressed(count: number): void {
    if (count > 0) this.suppressed.inc(count);
  }

  /** Violations of committed events with one code. */
  planViolations = (code: string, count: number): void => {
    if (count > 0) this.violations(code).inc(count);
  };

  /** Events committed unchecked: their plan could not be read. */
  planUnavailable = (count: number): void => {
    if (count > 0) this.unavailablePlans.inc(count);
  };

  /** One schema compiled, in milliseconds. */
  planCompiled = (ms: number): void => {
    this.planCompile.observe(ms / 1000);
  };

  dedupeHit(): void {
    this.dedupeHits.inc();
  }

  rateLimited(limitType: LimitType): void {
    this.limited(limitType).inc();
  }

  writeKeyCache = (result: WriteKeyCacheResult): void => {
    this.cache[result].inc();
  };

  /** Where the outbox gauges read from, at scrape time. */
  watchOutbox(pending: () => { records: number; requests: number }): void {
    this.outbox = pending;
  }

  text(): Promise<string> {
    return this.registry.metrics();
  }
}

/**
 * The metrics port's listener: GET /metrics in Prometheus text; GET /health, the whole health
 * report with each delivery consumer group and its lag (the public port's /health shows the
 * statuses only); 404 otherwise. Apart from the public port, so that the Ingress (which routes
 * every path of it) cannot expose them.
 */
export function metricsHttp(metrics: IngestionMetrics, health?: HealthReporter): RequestListener {
  return (req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (health && (req.method === 'GET' || req.method === 'HEAD') && path === '/health') {
      health.report().then(
        ({ status, body }) => {
          const text = JSON.stringify(body);
          res.writeHead(status, {
            'content-type': 'application/json; charset=utf-8',
            'content-length': Buffer.byteLength(text),
          });
          res.end(req.method === 'HEAD' ? undefined : text);
        },
        () => {
          res.writeHead(503, { 'content-type': 'application/json' }).end('{"ok":false}');
        },
      );
      return;
    }
    if ((req.method === 'GET' || req.method === 'HEAD') && path === '/metrics') {
      metrics.text().then(
        (text) => {
          res.writeHead(200, {
            'content-type': metrics.registry.contentType,
            'content-length': Buffer.byteLength(text),
          });
          res.end(req.method === 'HEAD' ? undefined : text);
        },
        (error: unknown) => {
          res.writeHead(500, { 'content-type': 'text/plain' }).end(`metrics unavailable: ${String(error)}`);
        },
      );
      return;
    }
    res.writeHead(404, { 'content-type': 'application/json' }).end('{"ok":false,"error":"not_found"}');
  };
}
