import type { Admin } from 'kafkajs';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { consumerGroupLag } from '@pipeline/kafka';
import type { WarehouseHealth } from './destination';
import type { FunctionStepCounters } from './functions/function-step';

export interface LagSource {
  admin: Admin;
  /** Group id -> the topic it reads. */
  groups: Record<string, string>;
}

/**
 * A delivery process's counters per destination, its consumer groups' lag and its open circuits
 * measured at scrape time, and the process's default metrics, in Prometheus text format.
 */
export class DeliveryMetrics {
  readonly registry = new Registry();
  private readonly deliveredEvents: Counter<'destination'>;
  private readonly consentSkipped: Counter<'destination'>;
  private readonly retried: Counter<'destination'>;
  private readonly deadLettered: Counter<'destination' | 'reason'>;
  private readonly batchDuration: Histogram<'destination'>;
  private readonly vendorResponses: Counter<'destination' | 'status_class'>;
  /** Destination -> how many of its integrations' circuits are open now. */
  private readonly circuits = new Map<string, () => number>();
  private readonly held: Counter<'destination'>;
  private readonly regulatedEvents: Counter<'destination' | 'reason'>;
  private warehouses: (() => readonly WarehouseHealth[]) | undefined;
  private functions: FunctionStepCounters | undefined;

  constructor(lag?: LagSource) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    this.deliveredEvents = new Counter({
      name: 'pipeline_delivery_events_delivered_total',
      help: 'Events a destination accepted.',
      labelNames: ['destination'],
      registers,
    });
    this.consentSkipped = new Counter({
      name: 'pipeline_delivery_events_consent_skipped_total',
      help: 'Events not sent to a destination because their consent denied its category.',
      labelNames: ['destination'],
      registers,
    });
    this.retried = new Counter({
      name: 'pipeline_delivery_records_retried_total',
      help: 'Records parked in the retry topic after a retryable failure.',
      labelNames: ['destination'],
      registers,
    });
    this.deadLettered = new Counter({
      name: 'pipeline_delivery_records_dead_lettered_total',
      help: 'Records parked in the dead-letter topic, by reason: the failure code (data_error, unstorable_event, http_400, ...) or attempts_exhausted.',
      labelNames: ['destination', 'reason'],
      registers,
    });
    this.batchDuration = new Histogram({
      name: 'pipeline_delivery_batch_duration_seconds',
      help: 'Time to handle one batch: delivering it to the destination and parking its failures.',
      labelNames: ['destination'],
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
      registers,
    });
    this.vendorResponses = new Counter({
      name: 'pipeline_delivery_vendor_responses_total',
      help: "Requests to a destination's vendor by outcome: the answer's status class (2xx, 3xx, 4xx, 5xx), or network when no answer came (refused, reset, timeout).",
      labelNames: ['destination', 'status_class'],
      registers,
    });
    this.held = new Counter({
      name: 'pipeline_delivery_records_held_total',
      help: 'Records parked in the retry topic because their target (a warehouse) cannot take anything now: never dead-lettered, included in records_retried_total.',
      labelNames: ['destination'],
      registers,
    });
    this.regulatedEvents = new Counter({
      name: 'pipeline_delivery_events_regulated_total',
      help: "Events taken out before delivery because a privacy regulation names their subject: suppressed (the subject is suppressed), deleted (received at or before a deletion's cut-off).",
      labelNames: ['destination', 'reason'],
      registers,
    });
    const warehouses = () => this.warehouses?.() ?? [];
    new Gauge({
      name: 'pipeline_delivery_warehouse_breaker_open',
      help: "1 while a warehouse's breaker is open or probing: its records are held in the retry topic; 0 once it loads again.",
      labelNames: ['warehouse'],
      registers,
      collect() {
        this.reset();
        for (const { warehouseId, breaker } of warehouses())
          this.set({ warehouse: warehouseId }, breaker === 'closed' ? 0 : 1);
      },
    });
    new Gauge({
      name: 'pipeline_delivery_warehouse_status',
      help: "1 for a warehouse's status as this consumer sees it: active, unavailable (down) or misconfigured (it refuses us).",
      labelNames: ['warehouse', 'status'],
      registers,
      collect() {
        this.reset();
        for (const { warehouseId, status } of warehouses()) this.set({ warehouse: warehouseId, status }, 1);
      },
    });
    const functions = () => this.functions;
    // Counted by the function step; each scrape adds what grew since the last.
    const reported = new Map<string, number>();
    new Counter({
      name: 'pipeline_function_events_total',
      help: 'Events a tenant function ran on, by result: ok, dropped, function_error, function_output_invalid (dead-lettered), function_timeout, function_memory, function_crashed (the batch retried).',
      labelNames: ['result'],
      registers,
      collect() {
        for (const [result, count] of functions()?.events ?? []) {
          this.inc({ result }, count - (reported.get(result) ?? 0));
          reported.set(result, count);
        }
      },
    });
    let cpuReported = 0;
    new Counter({
      name: 'pipeline_function_cpu_seconds_total',
      help: 'CPU time the function sandboxes spent running tenant functions.',
      registers,
      collect() {
        const micros = functions()?.cpuMicros ?? 0;
        this.inc((micros - cpuReported) / 1e6);
        cpuReported = micros;
      },
    });
    new Gauge({
      name: 'pipeline_function_disabled',
      help: 'Function versions disabled now by their breaker: their events are held in the retry topic.',
      registers,
      collect() {
        this.set(functions()?.disabled() ?? 0);
      },
    });
    const circuits = this.circuits;
    new Gauge({
      name: 'pipeline_delivery_circuits_open',
      help: 'Integrations whose circuit breaker is open: their records park without calling the vendor until a probe succeeds.',
      labelNames: ['destination'],
      registers,
      collect() {
        this.reset();
        for (const [destination, open] of circuits) this.set({ destination }, open());
      },
    });
    if (lag) {
      new Gauge({
        name: 'pipeline_delivery_consumer_lag',
        help: 'Records of the topic the consumer group has not committed yet.',
        labelNames: ['group', 'topic', 'partition'],
        registers,
        async collect() {
          this.reset();
          for (const [group, topic] of Object.entries(lag.groups)) {
            for (const { partition, lag: value } of (await consumerGroupLag(lag.admin, group, topic))
              .partitions)
              this.set({ group, topic, partition: String(partition) }, value);
          }
        },
      });
    }
  }

  delivered(destination: string, events: number, consentSkipped: number): void {
    if (events > 0) this.deliveredEvents.inc({ destination }, events);
    if (consentSkipped > 0) this.consentSkipped.inc({ destination }, consentSkipped);
  }

  /**
   * `deadLetterReasons`: the reason category of each dead-lettered record (see reasonCategory);
   * `held`: how many of the retried ones were held for their target's outage.
   */
  parked(destination: string, retried: number, deadLetterReasons: readonly string[], held = 0): void {
    if (retried > 0) this.retried.inc({ destination }, retried);
    if (held > 0) this.held.inc({ destination }, held);
    for (const reason of deadLetterReasons) this.deadLettered.inc({ destination, reason });
  }

  /** Events a batch's regulations took out before delivery. */
  regulated(destination: string, suppressed: number, deleted: number): void {
    if (suppressed > 0) this.regulatedEvents.inc({ destination, reason: 'suppressed' }, suppressed);
    if (deleted > 0) this.regulatedEvents.inc({ destination, reason: 'deleted' }, deleted);
  }

  batchHandled(destination: string, seconds: number): void {
    this.batchDuration.observe({ destination }, seconds);
  }

  /** One vendor request's outcome (ForwarderOptions.onResponse). */
  vendorResponse(destination: string, statusClass: string): void {
    this.vendorResponses.inc({ destination, status_class: statusClass });
  }

  /** Reports `openCircuits()` of the destination at each scrape. */
  watchCircuits(destination: string, openCircuits: () => number): void {
    this.circuits.set(destination, openCircuits);
  }

  /** Reports the function step's counts at each scrape. */
  watchFunctions(counters: FunctionStepCounters): void {
    this.functions = counters;
  }

  /** Reports each warehouse's breaker and status at each scrape. */
  watchWarehouses(health: () => readonly WarehouseHealth[]): void {
    this.warehouses = health;
  }

  /** The Prometheus text exposition. */
  text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
