import { normalizeEvent, parseOutboxEnvelope, receiptContextOf, type WarehouseRow } from '@pipeline/events';
import type { Logger } from '@pipeline/logger';
import { warehouseSchemaFor } from '@pipeline/tenancy';
import type { DeliveryMessage, Destination } from '../destination';
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

  async deliver(messages: readonly DeliveryMessage[]): Promise<void> {
    const bySchema = new Map<string, WarehouseRow[]>();
    for (const message of messages) {
      const envelope = parseOutboxEnvelope(message.value);
      if (!envelope) {
        // Retrying cannot fix a record that is not an envelope; the dead-letter topic is the
        // place for it once it exists (issue 5), until then it is logged and passed over.
        this.logger.error('skipping a record that is not an outbox envelope', {
          partition: message.partition,
          offset: message.offset,
        });
        continue;
      }
      const schema = warehouseSchemaFor(envelope.accountId);
      const receipt = receiptContextOf(envelope);
      const rows = bySchema.get(schema) ?? [];
      for (const event of envelope.events) rows.push(normalizeEvent(event, receipt));
      bySchema.set(schema, rows);
    }
    for (const [schema, rows] of bySchema) {
      const result = await this.writer.write(schema, rows);
      this.logger.debug('warehouse batch loaded', { schema, ...result });
    }
  }

  close(): Promise<void> {
    return this.writer.close();
  }
}
