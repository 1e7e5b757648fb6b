import type { Pool, PoolClient } from 'pg';
import type {
  AccountLocation,
  SubjectErasure,
  SubjectIds,
  SubjectRowCounts,
  WarehouseTableName,
} from '../warehouse-engine';
import { warehouseErrorKind } from '../warehouse-errors';
import { inWarehouseTransaction, type WarehouseTimeouts } from '../warehouse-pool';
import {
  cutOffTables,
  distinctSubjects,
  groupMemberColumns,
  noRows,
  subjectColumns,
  subjectTables,
} from '../subject-columns';
import { quoteIdent } from './warehouse-ddl';

// A regulated subject's rows in an account's PostgreSQL schema: counted, their emails read, and
// erased in bounded chunks. Each chunk is one statement in a transaction of its own with the
// warehouse's time limits (SET LOCAL), so a chunk never holds locks longer than a writer's
// batch would, and other accounts' writes on the same server keep going between chunks.

/** Runs `run` on `client`; an abort of `signal` cancels its statement on the server. */
export type Cancellable = <T>(
  client: PoolClient,
  signal: AbortSignal | undefined,
  run: () => Promise<T>,
) => Promise<T>;

/**
 * The ids as PostgreSQL parameters (text[]), as the door stored them, and the cut-off (ISO text
 * or null); null when there is no id.
 */
function parameters(subjects: SubjectIds): [string[], string[], string | null] | null {
  const { userIds, anonymousIds } = distinctSubjects(subjects);
  return userIds.length + anonymousIds.length === 0
    ? null
    : [userIds, anonymousIds, subjects.receivedAtOrBefore?.toISOString() ?? null];
}

/**
 * The table's rows naming a subject: $1 the user ids, $2 the anonymous ids (text[]); `cutoff`
 * the parameter of the cut-off (timestamptz, null for none), which bounds events and aliases.
 */
export function subjectPredicate(table: WarehouseTableName, cutoff: string): string {
  const { user, anonymous } = subjectColumns[table];
  const ids = [
    ...user.map((c) => `${quoteIdent(c)} = ANY($1::text[])`),
    ...anonymous.map((c) => `${quoteIdent(c)} = ANY($2::text[])`),
  ].join(' OR ');
  return cutOffTables.has(table)
    ? `(${ids}) AND (${cutoff}::timestamptz IS NULL OR received_at <= ${cutoff}::timestamptz)`
    : ids;
}

/**
 * One chunk of the erasure of a table: at most $3 rows, found through the id indexes and
 * removed by their ctid (a TID scan, where `ctid IN (subquery)` can turn into a join over the
 * whole table). Groups are scrubbed, not deleted: the row is the group's, shared by its members.
 * Answers the rows picked and the rows changed; fewer changed than picked means a row moved
 * under us (a concurrent upsert of a user): it is still there, and the caller calls again.
 */
export function erasureStatement(schema: string, table: WarehouseTableName): string {
  const relation = `${quoteIdent(schema)}.${quoteIdent(table)}`;
  const picked = `SELECT ctid FROM ${relation} WHERE ${subjectPredicate(table, '$4')} LIMIT $3`;
  const target = `ctid = ANY(ARRAY(SELECT ctid FROM picked))`;
  const change =
    table === 'groups'
      ? `UPDATE ${relation} SET ${groupMemberColumns.map((c) => `${quoteIdent(c)} = NULL`).join(', ')} WHERE ${target} RETURNING 1`
      : `DELETE FROM ${relation} WHERE ${target} RETURNING 1`;
  return `WITH picked AS MATERIALIZED (${picked}), changed AS (${change})
          SELECT (SELECT count(*) FROM picked) AS picked, (SELECT count(*) FROM changed) AS changed`;
}

export function countStatement(schema: string, table: WarehouseTableName): string {
  return `SELECT count(*) AS n FROM ${quoteIdent(schema)}.${quoteIdent(table)} WHERE ${subjectPredicate(table, '$3')}`;
}

export function emailsStatement(schema: string): string {
  return `SELECT DISTINCT traits ->> 'email' AS email FROM ${quoteIdent(schema)}."users"
           WHERE (${subjectPredicate('users', 'NULL')}) AND jsonb_typeof(traits -> 'email') = 'string'
           ORDER BY 1`;
}

export class PostgresSubjectErasure {
  constructor(
    private readonly pool: Pool,
    private readonly timeouts: WarehouseTimeouts,
    private readonly cancellable: Cancellable,
    /** Brings the account's schema up to date (the id indexes are migration 3). */
    private readonly ensureSchema: (schema: string) => Promise<void>,
  ) {}

  async count(
    account: AccountLocation,
    subjects: SubjectIds,
    signal: AbortSignal | undefined,
  ): Promise<SubjectRowCounts> {
    const counts = noRows();
    const values = parameters(subjects);
    const tables = await this.existingTables(account.schema);
    if (!values || tables.length === 0) return counts;
    await this.ensureSchema(account.schema);
    await this.transaction(signal, async (client) => {
      for (const table of tables) {
        const { rows } = await this.cancellable(client, signal, () =>
          client.query<{ n: string }>(
            countStatement(account.schema, table),
            cutOffTables.has(table) ? values : [values[0], values[1]],
          ),
        );
        counts[table] = Number(rows[0]?.n ?? 0);
      }
    });
    return counts;
  }

  async emails(account: AccountLocation, subjects: SubjectIds): Promise<string[]> {
    const values = parameters(subjects);
    if (!values || !(await this.existingTables(account.schema)).includes('users')) return [];
    await this.ensureSchema(account.schema);
    return this.transaction(undefined, async (client) => {
      const { rows } = await client.query<{ email: string }>(emailsStatement(account.schema), [
        values[0],
        values[1],
      ]);
      return rows.map((r) => r.email);
    });
  }

  async erase(
    account: AccountLocation,
    subjects: SubjectIds,
    options: { maxRows: number; signal?: AbortSignal },
  ): Promise<SubjectErasure> {
    const maxRows = Math.floor(options.maxRows);
    if (!(maxRows >= 1)) throw new Error(`maxRows must be a positive integer, not ${options.maxRows}`);
    const erased = noRows();
    const values = parameters(subjects);
    const tables = await this.existingTables(account.schema);
    if (!values || tables.length === 0) return { erased, more: false };
    await this.ensureSchema(account.schema);
    let more = false;
    for (const table of tables) {
      options.signal?.throwIfAborted();
      const { picked, changed } = await this.transaction(options.signal, async (client) => {
        const { rows } = await this.cancellable(client, options.signal, () =>
          client.query<{ picked: string; changed: string }>(
            erasureStatement(account.schema, table),
            cutOffTables.has(table)
              ? [values[0], values[1], maxRows, values[2]]
              : [values[0], values[1], maxRows],
          ),
        );
        return { picked: Number(rows[0]?.picked ?? 0), changed: Number(rows[0]?.changed ?? 0) };
      });
      erased[table] = changed;
      if (picked === maxRows || changed < picked) more = true;
    }
    return { erased, more };
  }

  /**
   * VACUUM of the account's warehouse tables: the dead tuples the erasure left are removed and
   * their space is reusable now rather than when autovacuum comes round. Not VACUUM FULL, which
   * rewrites a table under an exclusive lock that stops the account's writes; so until reused,
   * a freed tuple's bytes may remain in the page's free space, and in WAL and backups.
   */
  async purge(account: AccountLocation): Promise<void> {
    for (const table of await this.existingTables(account.schema)) {
      const client = await this.pool.connect();
      let broken: Error | undefined;
      try {
        await client.query(`VACUUM ${quoteIdent(account.schema)}.${quoteIdent(table)}`);
      } catch (error) {
        if (warehouseErrorKind(error) === 'unavailable') broken = error as Error;
        throw error;
      } finally {
        client.release(broken);
      }
    }
  }

  private async transaction<T>(
    signal: AbortSignal | undefined,
    work: (client: PoolClient) => Promise<T>,
  ): Promise<T> {
    signal?.throwIfAborted();
    const client = await this.pool.connect();
    let broken: Error | undefined;
    try {
      return await inWarehouseTransaction(client, this.timeouts, () => work(client));
    } catch (error) {
      if (warehouseErrorKind(error) === 'unavailable') broken = error as Error;
      throw error;
    } finally {
      client.release(broken);
    }
  }

  private async existingTables(schema: string): Promise<WarehouseTableName[]> {
    const { rows } = await this.pool.query<{ table_name: string }>(
      'SELECT table_name FROM information_schema.tables WHERE table_schema = $1 AND table_name = ANY($2)',
      [schema, subjectTables],
    );
    const found = new Set(rows.map((r) => r.table_name));
    return subjectTables.filter((t) => found.has(t));
  }
}
