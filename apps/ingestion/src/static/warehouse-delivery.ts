import { normalizeEvent, receiptContextOf } from '@pipeline/events';
import type { WarehouseWriter } from '@pipeline/destinations';
import type { Logger } from '@pipeline/logger';
import type { StaticDelivery, ValidatedBatch } from '../collect/collect-service';
import { ingestionErrors } from '../collect/ingestion-errors';

/**
 * Static mode's destination: the PostgreSQL warehouse, written before the answer through the
 * same writer the delivery consumers use. 503 `no_destination_ready` when the warehouse cannot
 * be reached at all, `destination_incomplete` when a write failed part-way.
 */
export class WarehouseStaticDelivery implements StaticDelivery {
  constructor(
    private readonly writer: WarehouseWriter,
    private readonly schema: string,
    private readonly logger: Logger,
  ) {}

  async deliver(batch: ValidatedBatch): Promise<Record<string, { rows: number; duplicates: number }>> {
    try {
      await this.writer.ensureSchema(this.schema);
    } catch (error) {
      this.logger.error('warehouse not ready', { error: (error as Error).message });
      throw ingestionErrors.deliveryUnavailable('no_destination_ready', 5);
    }
    const receipt = receiptContextOf(batch.receipt);
    const rows = batch.events.map((event) => normalizeEvent(event, receipt));
    try {
      const result = await this.writer.write(this.schema, rows);
      return { warehouse: { rows: result.written, duplicates: result.duplicates } };
    } catch (error) {
      this.logger.error('warehouse write failed', { error: (error as Error).message });
      throw ingestionErrors.deliveryUnavailable('destination_incomplete', 5);
    }
  }
}
