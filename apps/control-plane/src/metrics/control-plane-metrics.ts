import type { Request, RequestHandler } from 'express';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { DataSource } from 'typeorm';
import type { Logger } from '@pipeline/logger';
import type { JobKind } from '../jobs/job.entity';
import type { JobMetrics, JobOutcome } from '../jobs/job-runner';
import { warehouseStatuses } from '../warehouse-registry/warehouse.entity';
import { TASK_RUN_KIND, type TaskRunMetrics, type TaskRunOutcome } from '../tasks/task-worker';

const jobKinds = ['source_sync', 'integration_run'] as const satisfies readonly JobKind[];

/** Every queue (kind, state) reported, 0 when none: a series does not vanish when its queue drains. */
const queueSeries: readonly { kind: string; state: string }[] = [
  ...jobKinds.flatMap((kind) => ['queued', 'running'].map((state) => ({ kind, state }))),
  ...['pending', 'running'].map((state) => ({ kind: TASK_RUN_KIND, state })),
];

// One grouped query over both queues' waiting and running items (partial indexes cover both).
const QUEUE_DEPTH_SQL = `
  SELECT kind, status AS state, count(*)::int AS items FROM jobs
   WHERE status IN ('queued', 'running') GROUP BY kind, status
  UNION ALL
  SELECT '${TASK_RUN_KIND}', status, count(*)::int FROM task_runs
   WHERE status IN ('pending', 'running') GROUP BY status`;

const WAREHOUSE_STATUS_SQL = 'SELECT name, status FROM warehouses ORDER BY name';

/** Mount points served by middleware rather than a route, reported as the mount point. */
const MOUNTS = ['/docs'];

/**
 * The route template a request matched (`/api/v1/apps/:appId`), never the path with its ids:
 * express's matched route joined with the base of the router it is in. Requests that matched no
 * route (404s, or answered before routing: body parse errors, the rate limit) are `unmatched`.
 * The routers are mounted without parameters, so their base holds no ids.
 */
export function routeTemplateOf(req: Request): string {
  const route = req.route as { path?: unknown } | undefined;
  if (route && typeof route.path === 'string') return `${req.baseUrl}${route.path}`;
  const path = req.originalUrl.split('?')[0] ?? '';
  return MOUNTS.find((mount) => path === mount || path.startsWith(`${mount}/`)) ?? 'unmatched';
}

export interface ControlPlaneMetricsOptions {
  dataSource: DataSource;
  logger: Logger;
  /** Bounds the queue depth query of a scrape (statement timeout and wait); 2 s by default. */
  queueQueryTimeoutMs?: number;
}

/**
 * The control plane's Prometheus metrics, on its own registry with the default process metrics:
 * its HTTP requests by route template, the work queues' depth (read at each scrape), job and
 * task-run durations by outcome, and the reaper's requeues. Served at GET /metrics.
 */
export class ControlPlaneMetrics implements JobMetrics, TaskRunMetrics {
  readonly registry = new Registry();
  private readonly httpRequests: Counter<'method' | 'route' | 'status'>;
  private readonly httpDuration: Histogram<'method' | 'route'>;
  private readonly jobDuration: Histogram<'kind' | 'outcome'>;
  private readonly taskRunDuration: Histogram<'template' | 'outcome'>;
  private readonly reaperRequeued: Counter<'kind'>;

  constructor(private readonly options: ControlPlaneMetricsOptions) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    this.httpRequests = new Counter({
      name: 'pipeline_control_plane_http_requests_total',
      help: 'HTTP requests answered, by method, route template (unmatched: no route) and status.',
      labelNames: ['method', 'route', 'status'],
      registers,
    });
    this.httpDuration = new Histogram({
      name: 'pipeline_control_plane_http_request_duration_seconds',
      help: 'Time from a request received to its answer sent, by method and route template.',
      labelNames: ['method', 'route'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    });
    const queue = this.queueDepth.bind(this);
    new Gauge({
      name: 'pipeline_control_plane_work_queue_items',
      help: `Items of the work queues by kind (the job kinds, ${TASK_RUN_KIND}) and state (queued or pending: waiting; running), read at scrape time.`,
      labelNames: ['kind', 'state'],
      registers,
      async collect() {
        const depth = await queue();
        this.reset();
        if (!depth) return;
        for (const { kind, state } of queueSeries) this.set({ kind, state }, 0);
        for (const { kind, state, items } of depth) this.set({ kind, state }, items);
      },
    });
    const warehouses = this.warehouseStatuses.bind(this);
    new Gauge({
      name: 'pipeline_warehouse_status',
      help: `1 for each warehouse's current status (${warehouseStatuses.join(', ')}), 0 for the others; read from the control plane's database at scrape time, as the warehouse consumers last reported it.`,
      labelNames: ['warehouse', 'status'],
      registers,
      async collect() {
        const rows = await warehouses();
        this.reset();
        if (!rows) return;
        for (const row of rows)
          for (const status of warehouseStatuses)
            this.set({ warehouse: row.name, status }, row.status === status ? 1 : 0);
      },
    });
    this.jobDuration = new Histogram({
      name: 'pipeline_control_plane_job_duration_seconds',
      help: 'One attempt of a job, from its claim to its end, by kind and outcome (succeeded, failed, retried, deferred, interrupted).',
      labelNames: ['kind', 'outcome'],
      buckets: [0.1, 0.5, 1, 5, 15, 30, 60, 300, 900, 1800, 3600, 7200],
      registers,
    });
    this.taskRunDuration = new Histogram({
      name: 'pipeline_control_plane_task_run_duration_seconds',
      help: 'One execution of a task run, from its claim to its end, by template and outcome (succeeded, failed, interrupted).',
      labelNames: ['template', 'outcome'],
      buckets: [0.05, 0.1, 0.5, 1, 5, 15, 30, 60, 300, 900],
      registers,
    });
    this.reaperRequeued = new Counter({
      name: 'pipeline_control_plane_reaper_requeued_total',
      help: 'Running items of a lost worker (stale heartbeat) put back in their queue by the reaper, by kind.',
      labelNames: ['kind'],
      registers,
    });
  }

  /** Counts and times every request by its route template; mount it first. */
  httpMiddleware(): RequestHandler {
    return (req, res, next) => {
      const started = process.hrtime.bigint();
      res.once('finish', () => {
        const route = routeTemplateOf(req);
        const seconds = Number(process.hrtime.bigint() - started) / 1e9;
        this.httpRequests.inc({ method: req.method, route, status: String(res.statusCode) });
        this.httpDuration.observe({ method: req.method, route }, seconds);
      });
      next();
    };
  }

  /** GET /metrics: the Prometheus text exposition. */
  handler(): RequestHandler {
    return (req, res, next) => {
      const answer = () =>
        this.registry.metrics().then((text) => {
          // As prom-client writes it (res.send would reorder the charset).
          res.setHeader('Content-Type', this.registry.contentType);
          res.end(text);
        }, next);
      // A scrape has no body. One sent anyway is read to its end (and dropped) before the
      // answer: an answer of tens of KB written while the client still uploads ended in a
      // connection reset instead of the answer (hostile-bodies.test.ts, once the API had ~80 routes).
      if (req.complete) void answer();
      else {
        req.once('end', () => void answer());
        req.once('error', next);
        req.resume();
      }
    };
  }

  jobFinished(kind: string, outcome: JobOutcome, seconds: number): void {
    this.jobDuration.observe({ kind, outcome }, seconds);
  }

  taskRunFinished(template: string, outcome: TaskRunOutcome, seconds: number): void {
    this.taskRunDuration.observe({ template, outcome }, seconds);
  }

  requeued(kind: string, items = 1): void {
    if (items > 0) this.reaperRequeued.inc({ kind }, items);
  }

  /** The queues' depth, or undefined (logged) when the database did not answer in time. */
  private queueDepth(): Promise<{ kind: string; state: string; items: number }[] | undefined> {
    return this.boundedRead(QUEUE_DEPTH_SQL, 'work queue depth');
  }

  /** Each warehouse's status, or undefined (logged) when the database did not answer in time. */
  private warehouseStatuses(): Promise<{ name: string; status: string }[] | undefined> {
    return this.boundedRead(WAREHOUSE_STATUS_SQL, 'warehouse statuses');
  }

  private async boundedRead<T>(sql: string, what: string): Promise<T[] | undefined> {
    const timeoutMs = this.options.queueQueryTimeoutMs ?? 2000;
    let timer: NodeJS.Timeout | undefined;
    try {
      const query = this.options.dataSource.transaction(async (tx) => {
        await tx.query(`SET LOCAL statement_timeout = ${Math.max(1, Math.floor(timeoutMs))}`);
        return (await tx.query(sql)) as T[];
      });
      // The statement timeout does not cover waiting for a connection of the pool.
      const late = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
      });
      query.catch(() => undefined);
      return await Promise.race([query, late]);
    } catch (error) {
      this.options.logger.warn(`${what} not read for metrics`, {
        error: error instanceof Error ? error.message : String(error),
      });
      return undefined;
    } finally {
      clearTimeout(timer);
    }
  }
}
