import type { Kafka, Producer } from 'kafkajs';
import { replayDeadLetters, type ReplayableLetter } from '@pipeline/destinations';
import { createProducer } from '@pipeline/kafka';

/** Puts a page of dead letters back in their kinds' retry topics; throws when Kafka does not take them. */
export interface DeadLetterReplayer {
  replay(byKind: ReadonlyMap<string, readonly ReplayableLetter[]>): Promise<number>;
}

/**
 * The control plane's replays, through the operator CLI's own function (@pipeline/destinations
 * `replayDeadLetters`: sends of at most 900 KB, acks -1, on the idempotent producer), connected
 * at the first replay and again after a failed connect.
 */
export class KafkaDeadLetterReplayer implements DeadLetterReplayer {
  private readonly producer: Producer;
  private connecting: Promise<void> | undefined;

  constructor(
    kafka: Kafka,
    private readonly topicPrefix: string,
  ) {
    this.producer = createProducer(kafka);
  }

  async replay(byKind: ReadonlyMap<string, readonly ReplayableLetter[]>): Promise<number> {
    this.connecting ??= this.producer.connect().catch((error: unknown) => {
      this.connecting = undefined;
      throw error;
    });
    await this.connecting;
    return replayDeadLetters(this.producer, byKind, this.topicPrefix);
  }

  async close(): Promise<void> {
    if (this.connecting) await this.producer.disconnect();
  }
}
