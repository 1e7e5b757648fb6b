import type { DataSource } from 'typeorm';

/** What a metered warehouse query was for: the service's own reads, or a task run's (model) reads. */
export type MeteredPurpose = 'query' | 'model_query';

/** Where measured query bytes go. */
export interface QueryMeter {
  record(accountId: string, purpose: MeteredPurpose, bytes: number): Promise<void>;
}

/** The bytes a measurement adds: whole, never negative (statistics flushed mid-query can shrink a difference). */
export const meteredBytes = (bytes: number): number => Math.max(0, Math.round(bytes));

/** Adds measured bytes to the account's row for the UTC day, in the control plane database. */
export class PgQueryMeter implements QueryMeter {
  constructor(private readonly dataSource: DataSource) {}

  async record(accountId: string, purpose: MeteredPurpose, bytes: number): Promise<void> {
    await this.dataSource.query(
      `INSERT INTO usage_query_bytes (account_id, day, purpose, bytes, queries)
       VALUES ($1, (now() AT TIME ZONE 'UTC')::date, $2, $3, 1)
       ON CONFLICT (account_id, day, purpose)
       DO UPDATE SET bytes = usage_query_bytes.bytes + EXCLUDED.bytes, queries = usage_query_bytes.queries + 1`,
      [accountId, purpose, meteredBytes(bytes)],
    );
  }
}
