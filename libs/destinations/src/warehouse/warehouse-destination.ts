import { normalizeEvent, parseOutboxEnvelope, receiptContextOf, type WarehouseRow } from '@pipeline/events';
import type { Logger } from '@pipeline/logger';
import { warehouseSchemaFor } from '@pipeline/tenancy';
import {
  notAnEnvelope,
  type DeliveryMessage,
  type DeliveryReport,
  type Destination,
  type FailedDelivery,
} from '../destination';
import type { WarehouseWriter } from './warehouse-writer';

/**
 * `delivery --destination warehouse`: normalizes each outbox record's events and loads them
 * into the account's schema. Loading is idempotent, so a batch read again after a crash or a
 * failed commit adds nothing.
 */
export class WarehouseDestination implements Destination {
  readonly kind = 'warehouse';

  constructor(
    private readonly writer: WarehouseWriter,
    private readonly logger: Logger,
  ) {}

  async deliver(messages: readonly DeliveryMessage[]): Promise<DeliveryReport> {
    const bySchema = new Map<string, WarehouseRow[]>();
    const failed: FailedDelivery[] = [];
    let delivered = 0;
    for (const message of messages) {
      const envelope = parseOutboxEnvelope(message.value);
      if (!envelope) {
        // Retrying cannot fix a record that is not an envelope: straight to the dead letters.
        failed.push(notAnEnvelope(message, this.kind));
        continue;
      }
      const schema = warehouseSchemaFor(envelope.accountId);
      const receipt = receiptContextOf(envelope);
      const rows = bySchema.get(schema) ?? [];
      for (const event of envelope.events) rows.push(normalizeEvent(event, receipt));
      bySchema.set(schema, rows);
    }
    // A database error throws: the batch is read again once the warehouse is back, rather than
    // every record being parked while it is down.
    for (const [schema, rows] of bySchema) {
      const result = await this.writer.write(schema, rows);
      delivered += rows.length;
      this.logger.debug('warehouse batch loaded', { schema, ...result });
    }
    return { delivered, consentSkipped: 0, failed };
  }

  close(): Promise<void> {
    return this.writer.close();
  }
}
