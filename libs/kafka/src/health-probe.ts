import type { Kafka } from 'kafkajs';
import { kafkaReachable } from './kafka-client';

/**
 * Answers "is the broker reachable?" for health endpoints. Load balancers probe often; the
 * answer is cached for `cacheMs` and concurrent probes share one check, so probes never pile
 * connections onto the broker.
 */
export class KafkaHealthProbe {
  private checkedAt = 0;
  private last = false;
  private inFlight: Promise<boolean> | undefined;

  constructor(
    private readonly kafka: Kafka,
    private readonly options: { cacheMs?: number; timeoutMs?: number } = {},
  ) {}

  async reachable(): Promise<boolean> {
    if (Date.now() - this.checkedAt < (this.options.cacheMs ?? 2000)) return this.last;
    this.inFlight ??= kafkaReachable(this.kafka, this.options.timeoutMs ?? 2000).then((ok) => {
      this.last = ok;
      this.checkedAt = Date.now();
      this.inFlight = undefined;
      return ok;
    });
    return this.inFlight;
  }
}
