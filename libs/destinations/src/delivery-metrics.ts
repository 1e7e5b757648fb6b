import type { Admin } from 'kafkajs';
import { Counter, Gauge, Registry } from 'prom-client';
import { consumerGroupLag } from '@pipeline/kafka';

export interface LagSource {
  admin: Admin;
  /** Group id -> the topic it reads. */
  groups: Record<string, string>;
}

/**
 * A delivery process's counters per destination, and its consumer groups' lag measured at
 * scrape time, in Prometheus text format.
 */
export class DeliveryMetrics {
  readonly registry = new Registry();
  private readonly deliveredEvents: Counter<'destination'>;
  private readonly consentSkipped: Counter<'destination'>;
  private readonly retried: Counter<'destination'>;
  private readonly deadLettered: Counter<'destination' | 'reason'>;

  constructor(lag?: LagSource) {
    const registers = [this.registry];
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

  /** `deadLetterReasons`: the reason category of each dead-lettered record (see reasonCategory). */
  parked(destination: string, retried: number, deadLetterReasons: readonly string[]): void {
    if (retried > 0) this.retried.inc({ destination }, retried);
    for (const reason of deadLetterReasons) this.deadLettered.inc({ destination, reason });
  }

  /** The Prometheus text exposition. */
  text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
