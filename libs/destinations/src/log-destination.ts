import type { Logger } from '@pipeline/logger';
import type { DeliveryMessage, Destination } from './destination';

/**
 * Writes one log line per event: what reached the outbox, with its position. For operators
 * watching a stream (like kafka-console-consumer), and the consumer the dev stack runs until
 * a warehouse is configured.
 */
export class LogDestination implements Destination {
  readonly kind = 'log';

  constructor(private readonly logger: Logger) {}

  async deliver(messages: readonly DeliveryMessage[]): Promise<void> {
    for (const message of messages) {
      this.logger.info('event', {
        partition: message.partition,
        offset: message.offset,
        key: message.key,
        ...summarize(message.value),
      });
    }
  }
}

/** The identifying fields of a tracking event; never its properties or traits. */
function summarize(value: Buffer | null): Record<string, unknown> {
  if (!value) return { empty: true };
  try {
    const event: unknown = JSON.parse(value.toString('utf8'));
    if (event && typeof event === 'object') {
      const { type, messageId, event: name } = event as Record<string, unknown>;
      return { type, messageId, event: name, bytes: value.length };
    }
  } catch {
    // Not JSON: report its size only.
  }
  return { bytes: value.length, json: false };
}
