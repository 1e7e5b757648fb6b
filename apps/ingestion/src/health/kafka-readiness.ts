import type { Admin, Kafka } from 'kafkajs';

/**
 * GET /readyz's Kafka check in hosted mode: the outbox topic's partition leaders answer (its
 * offsets can be read), on one admin connection kept between probes. Not the control plane:
 * cached write keys keep being served while it is down (TenantCache's stale-if-error), and every
 * instance would be unready at once.
 */
export class KafkaReadiness {
  private admin: Admin | undefined;

  constructor(
    private readonly kafka: Kafka,
    private readonly topic: string,
  ) {}

  /** Resolves when the brokers answer; rejects otherwise (the caller bounds the wait). */
  check = async (): Promise<void> => {
    try {
      if (!this.admin) {
        const admin = this.kafka.admin({ retry: { retries: 0 } });
        this.admin = admin;
        await admin.connect();
      }
      await this.admin.fetchTopicOffsets(this.topic);
    } catch (error) {
      await this.reset();
      throw error;
    }
  };

  /** Drops the connection (after a failure, or at shutdown); the next check opens another. */
  async reset(): Promise<void> {
    const admin = this.admin;
    this.admin = undefined;
    await admin?.disconnect().catch(() => undefined);
  }
}
