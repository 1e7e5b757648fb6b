import { AppError } from '@pipeline/errors';
import type { DataSource, EntityManager } from 'typeorm';
import { returnedRows } from '../database/returned-rows';
import { AppEntity } from '../apps/app.entity';
import { IntegrationEntity } from '../integrations/integration.entity';
import { iso, isoOrNull } from '../http/list-query';
import { listResponse, type ListResponse, type PageRequest } from '../http/pagination';
import { isUuid } from '../http/ids';
import type { DeadLetterStatus } from './dead-letter.entity';
import type { DeadLetterReplayer } from './dead-letter-replayer';
import { defaultDeadLetterLimits, type DeadLetterLimits } from './dead-letter-limits';
import { PREVIEW_EVENT_BYTES, PREVIEW_EVENTS, previewEvents } from './dead-letter-preview';
import { AccountReplayLimiter, type WriteKeyEventCounter } from './dead-letter-replay-limits';
import { retentionCutoff } from './dead-letter-retention';
import { MAX_SELECTED, type DeadLetterFilter, type DeadLetterSelection } from './dead-letter-selector';
import type { DeadLetterDiscardResult, DeadLetterReplayResult, DeadLetterView } from './dead-letter.dto';

/** A replay page: rows taken, sent and committed together. */
export const REPLAY_PAGE_ROWS = 50;
/**
 * A replay page's records together (a first record larger than this alone still makes a page):
 * what the control plane holds of one replay at a time, whatever the selection.
 */
export const REPLAY_PAGE_BYTES = 5 * 1024 * 1024;

export const deadLettersUnavailable = (replayed: number, cause?: unknown) => {
  const error = new AppError(
    503,
    'dead_letters_unavailable',
    replayed === 0
      ? 'The dead letters cannot be put back for delivery at the moment (Kafka did not take them); nothing was replayed, try again later'
      : `Kafka stopped taking the dead letters: ${replayed} were replayed, the others are still pending; try again later to replay them`,
    { retryAfterSeconds: 30, replayed },
  );
  if (cause !== undefined) error.cause = cause;
  return error;
};

export const replayRateLimited = (retryAfterSeconds: number, perMinute: number) =>
  new AppError(
    429,
    'dead_letter_replay_rate_limited',
    `This account made more than ${perMinute} replays this minute (DEAD_LETTER_REPLAYS_PER_MINUTE); try again in ${retryAfterSeconds} s`,
    { retryAfterSeconds },
  );

/** SQL conditions (AND) of a selection on `dead_letters`, with their parameters after `params`. */
function conditionsOf(
  accountId: string,
  selection: DeadLetterSelection,
  keptSince: Date,
): { where: string; params: unknown[] } {
  const params: unknown[] = [accountId, keptSince];
  // Rows past the retention are out before the sweep deletes them.
  const where = ['account_id = $1', 'last_seen_at >= $2'];
  const add = (sql: (n: string) => string, value: unknown) => {
    params.push(value);
    where.push(sql(`$${params.length}`));
  };
  if (selection.ids) add((n) => `id = ANY(${n}::uuid[])`, selection.ids);
  if (selection.destination) add((n) => `destination = ${n}`, selection.destination);
  if (selection.destinationId) add((n) => `target = ${n}`, selection.destinationId);
  if (selection.reasonCode) add((n) => `reason_code = ${n}`, selection.reasonCode);
  if (selection.since) add((n) => `last_seen_at >= ${n}`, selection.since);
  if (selection.until) add((n) => `last_seen_at < ${n}`, selection.until);
  return { where: where.join(' AND '), params };
}

/** A taken row, its record not read yet (takePage). */
interface TakenRow {
  id: string;
  destination: string;
  target: string;
  origin: string;
  reason: string;
  record_key: Buffer | null;
  kafka_partition: number;
  kafka_offset: string;
  event_count: number;
  write_key_id: string | null;
}

interface ReplayRow extends TakenRow {
  record_value: Buffer;
}

/**
 * A record is read in parts of this many bytes. PostgreSQL sends bytea as hex text, which
 * node-postgres reads as one string per field: a 512 KB record is a 1 MB string, allocated in
 * V8's large-object space, and 1000 of them drive a major collection every few pages (pauses
 * of 100 ms and more, measured). Parts of 32 KB are 64 KB strings, which die young.
 */
export const RECORD_PART_BYTES = 32 * 1024;

/** A dead letter's record, read in parts of RECORD_PART_BYTES. */
export async function readRecord(manager: EntityManager, deadLetterId: string): Promise<Buffer> {
  return (await readRecords(manager, [deadLetterId])).get(deadLetterId) ?? Buffer.alloc(0);
}

/**
 * Several dead letters' records in one query, each still read in parts of RECORD_PART_BYTES;
 * an id with no row is absent from the map.
 */
export async function readRecords(
  manager: EntityManager,
  deadLetterIds: readonly string[],
): Promise<Map<string, Buffer>> {
  const parts: { id: string; part: Buffer }[] = await manager.query(
    `SELECT id, substring(record_value FROM (n - 1) * ${RECORD_PART_BYTES} + 1 FOR ${RECORD_PART_BYTES}) AS part
     FROM dead_letters,
       generate_series(1, GREATEST(1, (octet_length(record_value) + ${RECORD_PART_BYTES - 1}) / ${RECORD_PART_BYTES})) AS n
     WHERE id = ANY($1::uuid[]) ORDER BY id, n`,
    [deadLetterIds],
  );
  const byId = new Map<string, Buffer[]>();
  for (const { id, part } of parts) {
    const list = byId.get(id) ?? [];
    list.push(part);
    byId.set(id, list);
  }
  return new Map([...byId].map(([id, list]) => [id, Buffer.concat(list)]));
}

/** A page of rows as the replay sends them: the records read, each on its own. */
async function withRecords(manager: EntityManager, rows: readonly TakenRow[]): Promise<ReplayRow[]> {
  const read: ReplayRow[] = [];
  for (const row of rows) read.push({ ...row, record_value: await readRecord(manager, row.id) });
  return read;
}

/** A row as the list reads it: never the record, its preview instead. */
interface ListRow {
  id: string;
  destination: string;
  target: string;
  reason: string;
  reason_code: string;
  attempts: number;
  permanent: boolean;
  dead_letter_count: number;
  first_seen_at: Date;
  last_seen_at: Date;
  status: DeadLetterStatus;
  replayed_at: Date | null;
  discarded_at: Date | null;
  message_ids: string[];
  event_count: number;
  preview: string;
}

export interface DeadLetterServiceOptions {
  /** The index's retention and cap, and the replays per minute (default: the documented defaults). */
  limits?: DeadLetterLimits;
  /** Counts each account's replays (DEAD_LETTER_REPLAYS_PER_MINUTE); absent: per instance. */
  replayLimiter?: AccountReplayLimiter;
  /** Counts replayed events against their write keys' limits; absent (no Redis): not counted. */
  writeKeyEvents?: WriteKeyEventCounter;
}

/**
 * The account's dead letters (the index the DeadLetterIndexer keeps): listed, replayed through
 * Kafka exactly once per pending record, or discarded.
 */
export class DeadLetterService {
  private readonly limits: DeadLetterLimits;
  private readonly replayLimiter: AccountReplayLimiter;
  private readonly writeKeyEvents: WriteKeyEventCounter | undefined;

  constructor(
    private readonly dataSource: DataSource,
    /** Absent (no Kafka in this graph): replays answer 503 `dead_letters_unavailable`. */
    private readonly replayer?: DeadLetterReplayer,
    options: DeadLetterServiceOptions = {},
  ) {
    this.limits = options.limits ?? defaultDeadLetterLimits;
    this.replayLimiter = options.replayLimiter ?? new AccountReplayLimiter(this.limits.replaysPerMinute);
    this.writeKeyEvents = options.writeKeyEvents;
  }

  private conditions(accountId: string, selection: DeadLetterSelection) {
    return conditionsOf(accountId, selection, retentionCutoff(this.limits.retentionDays, new Date()));
  }

  /**
   * A page of the account's dead letters. Reads each row's stored preview, never its record: a
   * row indexed before previews were kept gets one computed by PostgreSQL (migration
   * 1796200000000), so the control plane parses at most PREVIEW_BYTES per letter.
   */
  async list(
    accountId: string,
    filter: DeadLetterFilter,
    status: DeadLetterStatus,
    page: PageRequest,
  ): Promise<ListResponse<DeadLetterView>> {
    const { where, params } = this.conditions(accountId, filter);
    params.push(status);
    const filtered = `FROM dead_letters WHERE ${where} AND status = $${params.length}`;
    const [counted] = (await this.dataSource.query(`SELECT count(*)::int AS n ${filtered}`, params)) as {
      n: number;
    }[];
    const rows: ListRow[] = await this.dataSource.query(
      `SELECT id, destination, target, reason, reason_code, attempts, permanent, dead_letter_count,
         first_seen_at, last_seen_at, status, replayed_at, discarded_at, message_ids,
         COALESCE(event_count, cardinality(message_ids)) AS event_count,
         COALESCE(preview, dead_letter_preview(record_value, ${PREVIEW_EVENTS}, ${PREVIEW_EVENT_BYTES})) AS preview
       ${filtered} ORDER BY last_seen_at DESC, id DESC LIMIT ${page.limit} OFFSET ${page.offset}`,
      params,
    );
    const names = await this.namesOf(
      accountId,
      rows.map((row) => row.target),
    );
    return listResponse(
      rows.map((row) => this.toView(row, names.get(row.target) ?? null)),
      counted?.n ?? 0,
      page,
    );
  }

  /**
   * Puts the selected pending records back in their kinds' retry topics, at most MAX_SELECTED
   * in one call, in pages of REPLAY_PAGE_ROWS rows and REPLAY_PAGE_BYTES: per page, in one
   * transaction, the rows become `replayed` (only those still pending, locked: a concurrent
   * replay waits and then finds them taken), the records are sent (acks -1), then it commits.
   * A failed send rolls back its page and answers 503 with the count of the pages before it,
   * so a record is sent once per pending state. Limited per account (429
   * `dead_letter_replay_rate_limited`); the events replayed count against their write keys.
   */
  async replay(accountId: string, selection: DeadLetterSelection): Promise<DeadLetterReplayResult> {
    const replayer = this.replayer;
    if (!replayer) throw deadLettersUnavailable(0);
    await this.requireIds(accountId, selection);
    const decision = await this.replayLimiter.take(accountId);
    if (!decision.allowed) throw replayRateLimited(decision.retryAfterSeconds, this.replayLimiter.perMinute);
    const matched = await this.matching(this.dataSource.manager, accountId, selection);
    let replayed = 0;
    while (replayed < MAX_SELECTED) {
      const rows = await this.dataSource.transaction(async (manager) => {
        const taken = await withRecords(
          manager,
          await this.takePage(manager, accountId, selection, MAX_SELECTED - replayed),
        );
        if (taken.length === 0) return taken;
        const byKind = new Map<string, ReturnType<typeof letterOf>[]>();
        for (const row of taken) {
          const letters = byKind.get(row.destination) ?? [];
          letters.push(letterOf(row));
          byKind.set(row.destination, letters);
        }
        try {
          await replayer.replay(byKind);
        } catch (error) {
          throw deadLettersUnavailable(replayed, error);
        }
        return taken;
      });
      if (rows.length === 0) break;
      replayed += rows.length;
      await this.writeKeyEvents?.count(eventsByWriteKey(rows));
    }
    return { replayed, skipped: Math.max(0, matched - replayed) };
  }

  /** Marks the selected pending records `discarded`: no replay takes them. */
  async discard(accountId: string, selection: DeadLetterSelection): Promise<DeadLetterDiscardResult> {
    await this.requireIds(accountId, selection);
    return this.dataSource.transaction(async (manager) => {
      const matched = await this.matching(manager, accountId, selection);
      const { where, params } = this.conditions(accountId, selection);
      const [, discarded] = (await manager.query(
        `UPDATE dead_letters SET status = 'discarded', discarded_at = now()
         WHERE status = 'pending' AND id IN (
           SELECT id FROM dead_letters WHERE ${where} AND status = 'pending'
           ORDER BY last_seen_at, id LIMIT ${MAX_SELECTED})`,
        params,
      )) as [unknown, number];
      return { discarded, skipped: matched - discarded };
    });
  }

  /** 404 `dead_letter_not_found` when an id is not one of the account's dead letters: nothing is done. */
  private async requireIds(accountId: string, selection: DeadLetterSelection): Promise<void> {
    if (!selection.ids) return;
    const found: { id: string }[] = await this.dataSource.query(
      'SELECT id FROM dead_letters WHERE account_id = $1 AND id = ANY($2::uuid[])',
      [accountId, selection.ids],
    );
    const known = new Set(found.map((row) => row.id));
    const missing = selection.ids.filter((id) => !known.has(id));
    if (missing.length > 0)
      throw new AppError(
        404,
        'dead_letter_not_found',
        `No dead letter with id ${missing.slice(0, 5).join(', ')}`,
      );
  }

  private async matching(
    manager: EntityManager,
    accountId: string,
    selection: DeadLetterSelection,
  ): Promise<number> {
    const { where, params } = this.conditions(accountId, selection);
    const [row] = (await manager.query(
      `SELECT count(*)::int AS n FROM dead_letters WHERE ${where}`,
      params,
    )) as {
      n: number;
    }[];
    return row?.n ?? 0;
  }

  /**
   * Moves one page of selected pending rows to `replayed`, oldest first: at most
   * REPLAY_PAGE_ROWS (and `left`), and only as many as fit in REPLAY_PAGE_BYTES together (the
   * first always), sized without reading the records (octet_length reads the stored length).
   */
  private async takePage(
    manager: EntityManager,
    accountId: string,
    selection: DeadLetterSelection,
    left: number,
  ): Promise<TakenRow[]> {
    const { where, params } = this.conditions(accountId, selection);
    params.push(REPLAY_PAGE_BYTES);
    return returnedRows<TakenRow>(
      await manager.query(
        `WITH candidates AS (
           SELECT id, last_seen_at, octet_length(record_value) AS bytes FROM dead_letters
           WHERE ${where} AND status = 'pending'
           ORDER BY last_seen_at, id LIMIT ${Math.min(REPLAY_PAGE_ROWS, left)}
           FOR UPDATE),
         page AS (
           SELECT id, row_number() OVER w AS n, sum(bytes) OVER w AS running
           FROM candidates WINDOW w AS (ORDER BY last_seen_at, id))
         UPDATE dead_letters d SET status = 'replayed', replayed_at = now()
         FROM page
         WHERE d.id = page.id AND d.status = 'pending' AND (page.n = 1 OR page.running <= $${params.length})
         RETURNING d.id, d.destination, d.target, d.origin, d.reason, d.record_key,
           d.kafka_partition, d.kafka_offset, COALESCE(d.event_count, cardinality(d.message_ids)) AS event_count,
           d.write_key_id`,
        params,
      ),
    );
  }

  /** The display name of each target that is an integration (its destination app's) or an app of the account. */
  private async namesOf(accountId: string, targets: string[]): Promise<Map<string, string>> {
    const ids = [...new Set(targets.filter(isUuid).map((t) => t.toLowerCase()))];
    const names = new Map<string, string>();
    if (ids.length === 0) return names;
    const integrations = await this.dataSource
      .getRepository(IntegrationEntity)
      .createQueryBuilder('integration')
      .innerJoin(AppEntity, 'app', 'app.id = integration.destinationAppId')
      .select(['integration.id AS id', 'app.displayName AS name'])
      .where('integration.accountId = :accountId', { accountId })
      .andWhere('integration.id IN (:...ids)', { ids })
      .getRawMany<{ id: string; name: string }>();
    const apps = await this.dataSource
      .getRepository(AppEntity)
      .createQueryBuilder('app')
      .select(['app.id AS id', 'app.displayName AS name'])
      .where('app.accountId = :accountId', { accountId })
      .andWhere('app.id IN (:...ids)', { ids })
      .getRawMany<{ id: string; name: string }>();
    for (const { id, name } of [...apps, ...integrations]) names.set(id, name);
    return names;
  }

  private toView(row: ListRow, destinationName: string | null): DeadLetterView {
    return {
      id: row.id,
      destination: row.destination,
      destinationId: row.target,
      destinationName,
      reasonCode: row.reason_code,
      reason: row.reason,
      attempts: row.attempts,
      permanent: row.permanent,
      deadLetterCount: row.dead_letter_count,
      firstSeenAt: iso(row.first_seen_at),
      lastSeenAt: iso(row.last_seen_at),
      status: row.status,
      replayedAt: isoOrNull(row.replayed_at),
      discardedAt: isoOrNull(row.discarded_at),
      messageIds: row.message_ids,
      eventCount: row.event_count,
      events: previewEvents(row.preview),
    };
  }
}

/** The events of a replayed page per write key (a record of no known key counts for none). */
function eventsByWriteKey(rows: readonly ReplayRow[]): Map<string, number> {
  const events = new Map<string, number>();
  for (const row of rows)
    if (row.write_key_id) events.set(row.write_key_id, (events.get(row.write_key_id) ?? 0) + row.event_count);
  return events;
}

/** A taken row as the replay sends it: the record as it was dead-lettered, with its origin. */
const letterOf = (row: ReplayRow) => ({
  partition: row.kafka_partition,
  offset: String(row.kafka_offset),
  key: row.record_key,
  value: row.record_value,
  target: row.target,
  reason: row.reason,
  origin: row.origin,
});
