import type { DataSource } from 'typeorm';
import { parseOutboxEnvelope } from '@pipeline/events';
import type { RegulatedSubjects } from '@pipeline/tenancy';
import { storedEventsOf, withoutRegulated } from './dead-letter-index';

/** One step of a dead-letter erasure: rows read, rows rewritten without events, rows deleted. */
export interface DeadLetterErasure {
  scanned: number;
  rewritten: number;
  deleted: number;
  /** Where the next step starts (an id), null when the account's rows are all scanned. */
  next: string | null;
}

interface LockedRow {
  id: string;
  record_key: Buffer | null;
  record_value: Buffer;
}

/**
 * One bounded step over the account's dead-letter index rows (all statuses), in id order after
 * `after`: each row's stored record (record_value: the outbox envelope JSON, bytea) is read,
 * events `regulation.decide(event, Date.parse(envelope.receivedAt))` marks are removed; a row
 * left with no event is deleted, a row with some left is rewritten (record_value, message_ids,
 * event_count, preview exactly as the indexer computes them). `next` is the cursor for the next
 * step, null when the scan is complete.
 *
 * The step's rows are locked (FOR UPDATE) from the read to the commit: the indexer upserting a
 * row meanwhile (the same record dead-lettered again) waits and then writes over the rewritten
 * row, instead of the step writing an older record over the indexer's. A record that is not an
 * envelope (poison) is left as it is; it is counted in `scanned`.
 */
export async function eraseFromDeadLetters(
  dataSource: DataSource,
  accountId: string,
  regulation: Pick<RegulatedSubjects, 'decide'>,
  options: { maxRows: number; after: string | null },
): Promise<DeadLetterErasure> {
  const { maxRows, after } = options;
  if (!Number.isInteger(maxRows) || maxRows < 1)
    throw new RangeError('maxRows must be a whole number from 1');
  return dataSource.transaction(async (manager) => {
    const rows: LockedRow[] = await manager.query(
      `SELECT id, record_key, record_value FROM dead_letters
       WHERE account_id = $1 AND ($2::uuid IS NULL OR id > $2::uuid)
       ORDER BY id LIMIT $3 FOR UPDATE`,
      [accountId, after, maxRows],
    );
    const deleted: string[] = [];
    let rewritten = 0;
    for (const row of rows) {
      const envelope = parseOutboxEnvelope(row.record_value);
      if (!envelope) continue;
      const left = withoutRegulated(envelope, row.record_key, regulation);
      if (!left) continue;
      if (left.value === null) {
        deleted.push(row.id);
        continue;
      }
      const stored = storedEventsOf(left.envelope, left.value);
      await manager.query(
        `UPDATE dead_letters SET record_value = $2, record_key = $3, message_ids = $4, preview = $5,
           event_count = $6
         WHERE id = $1`,
        [row.id, stored.recordValue, left.key, stored.messageIds, stored.preview, stored.eventCount],
      );
      rewritten += 1;
    }
    if (deleted.length > 0)
      await manager.query('DELETE FROM dead_letters WHERE id = ANY($1::uuid[])', [deleted]);
    const last = rows[rows.length - 1];
    return {
      scanned: rows.length,
      rewritten,
      deleted: deleted.length,
      next: rows.length < maxRows || !last ? null : last.id,
    };
  });
}
