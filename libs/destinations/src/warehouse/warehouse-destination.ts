import {
  normalizeEvent,
  parseOutboxEnvelope,
  receiptContextOf,
  type OutboxEnvelope,
  type TrackingEvent,
  type WarehouseRow,
} from '@pipeline/events';
import type { Logger } from '@pipeline/logger';
import { warehouseSchemaFor } from '@pipeline/tenancy';
import {
  DestinationUnavailable,
  notAnEnvelope,
  type DeliveryMessage,
  type DeliveryReport,
  type Destination,
  type FailedDelivery,
} from '../destination';
import { recordOutcome, type OutcomeRecorder } from '../outcome-recorder';
import { describeWarehouseError, warehouseErrorKind } from './warehouse-errors';
import type { WarehouseWriter } from './warehouse-writer';

/** One event of a record, normalized. */
interface Item {
  message: DeliveryMessage;
  envelope: OutboxEnvelope;
  event: TrackingEvent;
  row: WarehouseRow;
}

/** Events of one record that cannot be stored, for the same reason. */
interface Unstorable {
  message: DeliveryMessage;
  envelope: OutboxEnvelope;
  events: TrackingEvent[];
  reason: string;
}

/**
 * `delivery --destination warehouse`: normalizes each outbox record's events and loads them
 * into the account's schema. Loading is idempotent, so a batch read again after a crash or a
 * failed commit adds nothing.
 *
 * Data never stalls the batch: an event that cannot be normalized, or whose rows PostgreSQL
 * refuses as data (warehouse-errors.ts), is isolated by splitting the write in halves, and
 * dead-lettered on its own, while every other event of the batch is stored. Only an
 * unavailable warehouse holds the batch back (DestinationUnavailable).
 */
export class WarehouseDestination implements Destination {
  readonly kind = 'warehouse';

  constructor(
    private readonly writer: WarehouseWriter,
    private readonly logger: Logger,
    private readonly outcomes?: OutcomeRecorder,
  ) {}

  async deliver(messages: readonly DeliveryMessage[]): Promise<DeliveryReport> {
    const bySchema = new Map<string, Item[]>();
    const failed: FailedDelivery[] = [];
    const unstorable: Unstorable[] = [];
    for (const message of messages) {
      const envelope = parseOutboxEnvelope(message.value);
      if (!envelope) {
        failed.push(notAnEnvelope(message, this.kind));
        continue;
      }
      const schema = warehouseSchemaFor(envelope.accountId);
      const receipt = receiptContextOf(envelope);
      const items = bySchema.get(schema) ?? [];
      for (const event of envelope.events) {
        try {
          items.push({ message, envelope, event, row: normalizeEvent(event, receipt) });
        } catch (error) {
          unstorable.push({
            message,
            envelope,
            events: [event],
            reason: `unstorable_event: ${(error as Error).message}`,
          });
        }
      }
      bySchema.set(schema, items);
    }
    let delivered = 0;
    for (const [schema, items] of bySchema) {
      if (items.length > 0) delivered += await this.store(schema, items, unstorable);
    }
    failed.push(...groupByRecord(unstorable, this.kind));
    return { delivered, consentSkipped: 0, failed };
  }

  close(): Promise<void> {
    return this.writer.close();
  }

  private recordStored(items: readonly Item[]): void {
    const byWriteKey = new Map<string, string[]>();
    for (const { envelope, event } of items) {
      const ids = byWriteKey.get(envelope.writeKeyId) ?? [];
      ids.push(event.messageId);
      byWriteKey.set(envelope.writeKeyId, ids);
    }
    for (const [writeKeyId, messageIds] of byWriteKey) {
      recordOutcome(this.outcomes, writeKeyId, messageIds, {
        destination: this.kind,
        integrationId: null,
        outcome: 'stored',
        reason: null,
      });
    }
  }

  /** Writes the items, splitting around the ones PostgreSQL refuses as data; returns how many were stored. */
  private async store(schema: string, items: Item[], unstorable: Unstorable[]): Promise<number> {
    try {
      const result = await this.writer.write(
        schema,
        items.map((item) => item.row),
      );
      this.logger.debug('warehouse batch loaded', { schema, ...result });
      if (this.outcomes) this.recordStored(items);
      return items.length;
    } catch (error) {
      const kind = warehouseErrorKind(error);
      if (kind === 'unavailable') {
        throw new DestinationUnavailable(`warehouse unavailable: ${describeWarehouseError(error)}`, {
          cause: error,
        });
      }
      if (kind === 'unexpected') throw error;
      const [only] = items;
      if (items.length === 1 && only) {
        this.logger.warn('warehouse refused an event', {
          schema,
          messageId: String(only.event.messageId),
          error: describeWarehouseError(error),
        });
        unstorable.push({
          message: only.message,
          envelope: only.envelope,
          events: [only.event],
          reason: `data_error: ${describeWarehouseError(error)}`,
        });
        return 0;
      }
      // Halves are written in order, so for users and groups the latest values still win.
      const half = Math.ceil(items.length / 2);
      return (
        (await this.store(schema, items.slice(0, half), unstorable)) +
        (await this.store(schema, items.slice(half), unstorable))
      );
    }
  }
}

/** One dead letter per record and reason, holding only that record's unstorable events. */
function groupByRecord(unstorable: readonly Unstorable[], target: string): FailedDelivery[] {
  const groups = new Map<string, Unstorable>();
  for (const entry of unstorable) {
    const key = `${entry.message.partition}/${entry.message.offset}/${entry.reason}`;
    const group = groups.get(key);
    if (group) group.events.push(...entry.events);
    else groups.set(key, { ...entry, events: [...entry.events] });
  }
  return [...groups.values()].map(({ message, envelope, events, reason }) => ({
    message,
    value: deadLetterValue(message, { ...envelope, events }),
    target,
    reason,
    retryable: false,
  }));
}

/** An envelope of the bad events, or the whole record when they cannot even be serialized again. */
function deadLetterValue(message: DeliveryMessage, envelope: OutboxEnvelope): Buffer {
  try {
    return Buffer.from(JSON.stringify(envelope));
  } catch {
    return message.value ?? Buffer.alloc(0);
  }
}
