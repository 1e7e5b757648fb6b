import { parseOutboxEnvelope } from '@pipeline/events';
import type { Logger } from '@pipeline/logger';
import type { DeliveryMessage, DeliveryReport, Destination } from './destination';

/**
 * Writes one log line per event: what reached the outbox, with its position. For operators
 * watching a stream (like kafka-console-consumer), and the consumer the dev stack runs until
 * a warehouse is configured.
 */
export class LogDestination implements Destination {
  readonly kind = 'log';

  constructor(private readonly logger: Logger) {}

  async deliver(messages: readonly DeliveryMessage[]): Promise<DeliveryReport> {
    let delivered = 0;
    for (const message of messages) {
      const position = { partition: message.partition, offset: message.offset, key: message.key };
      const envelope = parseOutboxEnvelope(message.value);
      if (!envelope) {
        this.logger.warn('record is not an outbox envelope', {
          ...position,
          bytes: message.value?.length ?? 0,
        });
        continue;
      }
      delivered += envelope.events.length;
      for (const event of envelope.events) {
        // The identifying fields only; never properties or traits.
        this.logger.info('event', {
          ...position,
          accountId: envelope.accountId,
          type: event.type,
          messageId: event.messageId,
          ...(event.type === 'track' ? { event: event.event } : {}),
        });
      }
    }
    // A log line cannot fail to be written; records that are not envelopes are only reported.
    return { delivered, consentSkipped: 0, failed: [] };
  }
}
