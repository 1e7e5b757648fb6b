import { randomUUID } from 'node:crypto';
import type { SubjectErasure, SubjectIds, SubjectRowCounts, WarehouseTableName } from '../warehouse-engine';
import { cutOffTables, distinctSubjects, noRows, subjectColumns } from '../subject-columns';
import { quoteName, storedTableOf, type ClickHouseLayout } from './clickhouse-ddl';
import type { ClickHouseServer } from './clickhouse-server';

// A regulated subject's rows in an account's ClickHouse database.
//
// The ids reach the server as rows of an INSERT (JSONEachRow, data, never SQL text) into a
// Memory table of the account's database, each call's under a name of its own, and every
// statement selects them from there. Not as query parameters: the client sends those of a
// DELETE in the URL, which servers and proxies cap at a few KiB (a regulation has up to 5,000
// ids), and ClickHouse writes a mutation's command, parameters substituted, into
// system.mutations and its mutation_*.txt files, kept after it finishes
// (finished_mutations_to_keep): a DELETE naming the ids would leave them on the server's disk.
// This way the command names the call, and a Memory table leaves nothing on disk: its rows go
// when the call ends, and with the server if it stops first.
//
// Erasing is one lightweight DELETE per table with matching rows: it masks them at once
// (queries skip them), and purge rewrites the parts without them (APPLY DELETED MASK). Users
// and groups are stored as every event that set them (users_rows, groups_rows) behind views:
// the subject's stored rows go, so a group's view shows its newest other member, and a trait
// only the subject set is gone with them.

/** The Memory table the ids of running calls are in (not an account table: see accountTables). */
export const subjectIdsTable = '_regulated_ids';

/** Rows of a crashed call older than this are removed by the next call. */
const staleAfter = 'INTERVAL 1 HOUR';

/** The stored tables purged: the tables and the rows tables of the views. */
const storedTables = (['events', 'users', 'groups', 'aliases'] as const).map(storedTableOf);

/**
 * The rows of `table` naming a subject of call {call:String}; with `cutOff`, events and aliases
 * received at or before {cutoff:String} only.
 */
export function subjectCondition(db: string, table: WarehouseTableName, cutOff = false): string {
  const ids = (kind: 'user' | 'anonymous' | null) =>
    `(SELECT id FROM ${quoteName(db)}.${quoteName(subjectIdsTable)} WHERE call = {call:String}${kind ? ` AND kind = '${kind}'` : ''})`;
  const { user, anonymous } = subjectColumns[table];
  const both = user.filter((c) => anonymous.includes(c));
  const condition = [
    ...user.filter((c) => !both.includes(c)).map((c) => `${quoteName(c)} IN ${ids('user')}`),
    ...anonymous.filter((c) => !both.includes(c)).map((c) => `${quoteName(c)} IN ${ids('anonymous')}`),
    ...both.map((c) => `${quoteName(c)} IN ${ids(null)}`),
  ].join(' OR ');
  return cutOff && cutOffTables.has(table)
    ? `(${condition}) AND received_at <= parseDateTime64BestEffort({cutoff:String}, 6, 'UTC')`
    : condition;
}

/** The cut-off as the server parses it (ISO, UTC), when the erasure has one. */
const cutoffOf = (subjects: SubjectIds) => subjects.receivedAtOrBefore?.toISOString();

export class ClickHouseSubjectErasure {
  constructor(
    private readonly server: ClickHouseServer,
    private readonly layout: ClickHouseLayout,
  ) {}

  async count(db: string, subjects: SubjectIds, signal?: AbortSignal): Promise<SubjectRowCounts> {
    const counts = noRows();
    const tables = await this.server.existingTables(db);
    if (tables.length === 0) return counts;
    return (
      (await this.withSubjects(db, subjects, (call) =>
        this.counted(db, tables, call, cutoffOf(subjects), signal),
      )) ?? counts
    );
  }

  async emails(db: string, subjects: SubjectIds): Promise<string[]> {
    if (!(await this.server.existingTables(db)).includes('users')) return [];
    const found = await this.withSubjects(db, subjects, async (call) => {
      const rows = await this.server.rows<{ email: string }>(
        `SELECT DISTINCT JSONExtractString(assumeNotNull(traits), 'email') AS email
           FROM ${quoteName(db)}.${quoteName(storedTableOf('users'))}
          WHERE (${subjectCondition(db, 'users')}) AND JSONType(ifNull(traits, '{}'), 'email') = 'String'
          ORDER BY email`,
        { call },
      );
      return rows.map((r) => r.email);
    });
    return found ?? [];
  }

  /** One lightweight DELETE per table that has rows of the subjects: all of them at once. */
  async erase(db: string, subjects: SubjectIds, signal?: AbortSignal): Promise<SubjectErasure> {
    const erased = noRows();
    const tables = await this.server.existingTables(db);
    if (tables.length === 0) return { erased, more: false };
    const cutoff = cutoffOf(subjects);
    await this.withSubjects(db, subjects, async (call) => {
      const counts = await this.counted(db, tables, call, cutoff, signal);
      for (const table of tables) {
        if (counts[table] === 0) continue;
        signal?.throwIfAborted();
        await this.server.client.command({
          query: `DELETE FROM ${quoteName(db)}.${quoteName(storedTableOf(table))} WHERE ${subjectCondition(db, table, cutoff !== undefined)}`,
          query_params: { call, ...(cutoff !== undefined ? { cutoff } : {}) },
          // Answered once the rows are masked: the next call counts none of them.
          clickhouse_settings: { ...this.server.settings, lightweight_deletes_sync: '2' },
          ...(signal ? { abort_signal: signal } : {}),
        });
        erased[table] = counts[table];
      }
    });
    return { erased, more: false };
  }

  /**
   * Rewrites every part of the account's tables that has masked rows without them (a
   * heavyweight mutation of those parts only), and waits for it.
   */
  async purge(db: string): Promise<void> {
    const masked = await this.server.rows<{ table: string }>(
      `SELECT DISTINCT table FROM system.parts
        WHERE database = {db:String} AND active AND has_lightweight_delete AND table IN {tables:Array(String)}`,
      { db, tables: storedTables },
    );
    for (const { table } of masked) {
      await this.server.client.command({
        query: `ALTER TABLE ${quoteName(db)}.${quoteName(table)} APPLY DELETED MASK`,
        clickhouse_settings: { ...this.server.settings, mutations_sync: '2' },
      });
    }
  }

  private async counted(
    db: string,
    tables: readonly WarehouseTableName[],
    call: string,
    cutoff: string | undefined,
    signal?: AbortSignal,
  ): Promise<SubjectRowCounts> {
    const counts = noRows();
    // Every stored copy, as the DELETE masks every copy (an event redelivered before a merge).
    // One top-level scan per table (UNION ALL), so the server's summary counts what each read.
    const rows = await this.server.rows<{ t: WarehouseTableName; n: string }>(
      tables
        .map(
          (t) =>
            `SELECT '${t}' AS t, toString(count()) AS n FROM ${quoteName(db)}.${quoteName(storedTableOf(t))} WHERE ${subjectCondition(db, t, cutoff !== undefined)}`,
        )
        .join(' UNION ALL '),
      { call, ...(cutoff !== undefined ? { cutoff } : {}) },
      signal,
    );
    for (const { t, n } of rows) counts[t] = Number(n);
    return counts;
  }

  /**
   * Runs `work` with the subjects' ids in the Memory table under a new call name, and removes
   * them afterwards, however `work` ends. Null, without `work`, when there is no id.
   */
  private async withSubjects<T>(
    db: string,
    subjects: SubjectIds,
    work: (call: string) => Promise<T>,
  ): Promise<T | null> {
    if (this.layout.cluster)
      throw new Error(
        'erasing subjects on a ClickHouse cluster is not supported: its Memory table is per node',
      );
    const { userIds, anonymousIds } = distinctSubjects(subjects);
    if (userIds.length + anonymousIds.length === 0) return null;
    const table = `${quoteName(db)}.${quoteName(subjectIdsTable)}`;
    await this.server.command(
      `CREATE TABLE IF NOT EXISTS ${table} (call String, kind Enum8('user' = 1, 'anonymous' = 2), id String, added_at DateTime DEFAULT now()) ENGINE = Memory`,
    );
    const call = randomUUID();
    const rows = [
      ...userIds.map((id) => ({ call, kind: 'user', id })),
      ...anonymousIds.map((id) => ({ call, kind: 'anonymous', id })),
    ];
    try {
      await this.server.client.insert({
        table,
        columns: ['call', 'kind', 'id'],
        values: rows,
        format: 'JSONEachRow',
        clickhouse_settings: { ...this.server.settings, async_insert: 0 },
      });
      return await work(call);
    } finally {
      await this.server.client.command({
        query: `ALTER TABLE ${table} DELETE WHERE call = {call:String} OR added_at < now() - ${staleAfter}`,
        query_params: { call },
        clickhouse_settings: { ...this.server.settings, mutations_sync: '2' },
      });
    }
  }
}
