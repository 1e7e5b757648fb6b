import type { EntityManager } from 'typeorm';
import { returnedRows } from '../database/returned-rows';

export interface StreamState {
  stream: string;
  /** The connector's cursor after the last page loaded; null before the first sync. */
  cursor: string | null;
  /** Rows written into the stream's table by all syncs. */
  rowsSynced: number;
}

/** Where each stream of a source resumes: saved only after the page's rows are in the warehouse. */
export class StreamStates {
  constructor(private readonly manager: EntityManager) {}

  async forSource(sourceId: string): Promise<Map<string, StreamState>> {
    const rows = returnedRows<{ stream: string; cursor: string | null; rows_synced: string }>(
      await this.manager.query(
        'SELECT stream, cursor, rows_synced FROM source_stream_states WHERE source_id = $1',
        [sourceId],
      ),
    );
    return new Map(
      rows.map((r) => [r.stream, { stream: r.stream, cursor: r.cursor, rowsSynced: Number(r.rows_synced) }]),
    );
  }

  async save(
    sourceId: string,
    stream: string,
    cursor: string | null,
    rowsAdded: number,
    jobId: string,
  ): Promise<void> {
    await this.manager.query(
      `INSERT INTO source_stream_states (source_id, stream, cursor, rows_synced, last_job_id, updated_at)
       VALUES ($1, $2, $3, $4, $5, now())
       ON CONFLICT (source_id, stream) DO UPDATE
         SET cursor = COALESCE(EXCLUDED.cursor, source_stream_states.cursor),
             rows_synced = source_stream_states.rows_synced + EXCLUDED.rows_synced,
             last_job_id = EXCLUDED.last_job_id, updated_at = now()`,
      [sourceId, stream, cursor, rowsAdded, jobId],
    );
  }
}
