import { AppError } from '@pipeline/errors';
import { parseOutboxEnvelope } from '@pipeline/events';
import { In, type DataSource, type EntityManager } from 'typeorm';
import { returnedRows } from '../database/returned-rows';
import { AppEntity } from '../apps/app.entity';
import { IntegrationEntity } from '../integrations/integration.entity';
import { iso, isoOrNull } from '../http/list-query';
import { listResponse, type ListResponse, type PageRequest } from '../http/pagination';
import { isUuid } from '../http/ids';
import { DeadLetterEntity, type DeadLetterStatus } from './dead-letter.entity';
import type { DeadLetterReplayer } from './dead-letter-replayer';
import { MAX_SELECTED, type DeadLetterFilter, type DeadLetterSelection } from './dead-letter-selector';
import type {
  DeadLetterDiscardResult,
  DeadLetterEvent,
  DeadLetterReplayResult,
  DeadLetterView,
} from './dead-letter.dto';

/** Events of a record the view shows; `messageIds` has them all. */
export const VIEW_EVENTS = 10;
/** An event larger than this as JSON is shown as a stub. */
export const VIEW_EVENT_BYTES = 16 * 1024;

const deadLettersUnavailable = (cause?: unknown) => {
  const error = new AppError(
    503,
    'dead_letters_unavailable',
    'The dead letters cannot be put back for delivery at the moment (Kafka did not take them); nothing was replayed, try again later',
    { retryAfterSeconds: 30 },
  );
  if (cause !== undefined) error.cause = cause;
  return error;
};

/** SQL conditions (AND) of a selection on `dead_letters`, with their parameters after `params`. */
function conditionsOf(
  accountId: string,
  selection: DeadLetterSelection,
): { where: string; params: unknown[] } {
  const params: unknown[] = [accountId];
  const where = ['account_id = $1'];
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

function eventsOf(value: Buffer): { events: DeadLetterEvent[]; eventCount: number } {
  const events = parseOutboxEnvelope(value)?.events ?? [];
  return {
    eventCount: events.length,
    events: events
      .slice(0, VIEW_EVENTS)
      .map((event) =>
        Buffer.byteLength(JSON.stringify(event)) > VIEW_EVENT_BYTES
          ? { messageId: event.messageId, type: event.type, truncated: true }
          : (event as unknown as DeadLetterEvent),
      ),
  };
}

interface ReplayRow {
  id: string;
  destination: string;
  target: string;
  origin: string;
  reason: string;
  record_key: Buffer | null;
  record_value: Buffer;
  kafka_partition: number;
  kafka_offset: string;
}

/**
 * The account's dead letters (the index the DeadLetterIndexer keeps): listed, replayed through
 * Kafka exactly once per pending record, or discarded.
 */
export class DeadLetterService {
  constructor(
    private readonly dataSource: DataSource,
    /** Absent (no Kafka in this graph): replays answer 503 `dead_letters_unavailable`. */
    private readonly replayer?: DeadLetterReplayer,
  ) {}

  async list(
    accountId: string,
    filter: DeadLetterFilter,
    status: DeadLetterStatus,
    page: PageRequest,
  ): Promise<ListResponse<DeadLetterView>> {
    const { where, params } = conditionsOf(accountId, filter);
    params.push(status);
    const filtered = `FROM dead_letters WHERE ${where} AND status = $${params.length}`;
    const [counted] = (await this.dataSource.query(`SELECT count(*)::int AS n ${filtered}`, params)) as {
      n: number;
    }[];
    const pageIds: { id: string }[] = await this.dataSource.query(
      `SELECT id ${filtered} ORDER BY last_seen_at DESC, id DESC LIMIT ${page.limit} OFFSET ${page.offset}`,
      params,
    );
    const found = await this.dataSource
      .getRepository(DeadLetterEntity)
      .findBy({ id: In(pageIds.map((r) => r.id)) });
    const byId = new Map(found.map((row) => [row.id, row]));
    const rows = pageIds.flatMap(({ id }) => byId.get(id) ?? []);
    const total = counted?.n ?? 0;
    const names = await this.namesOf(
      accountId,
      rows.map((row) => row.target),
    );
    return listResponse(
      rows.map((row) => this.toView(row, names.get(row.target) ?? null)),
      total,
      page,
    );
  }

  /**
   * Puts the selected pending records back in their kinds' retry topics. In one transaction:
   * the rows become `replayed` (only those still pending: a concurrent replay waits for this
   * one and then finds them taken), the records are sent (acks -1), then it commits; a failed
   * send rolls back and answers 503, so a record is sent once per pending state.
   */
  async replay(accountId: string, selection: DeadLetterSelection): Promise<DeadLetterReplayResult> {
    const replayer = this.replayer;
    if (!replayer) throw deadLettersUnavailable();
    await this.requireIds(accountId, selection);
    return this.dataSource.transaction(async (manager) => {
      const matched = await this.matching(manager, accountId, selection);
      const rows: ReplayRow[] = await this.take(manager, accountId, selection, 'replayed');
      const byKind = new Map<string, ReturnType<typeof letterOf>[]>();
      for (const row of rows)
        byKind.set(row.destination, [...(byKind.get(row.destination) ?? []), letterOf(row)]);
      try {
        await replayer.replay(byKind);
      } catch (error) {
        throw deadLettersUnavailable(error);
      }
      return { replayed: rows.length, skipped: matched - rows.length };
    });
  }

  /** Marks the selected pending records `discarded`: no replay takes them. */
  async discard(accountId: string, selection: DeadLetterSelection): Promise<DeadLetterDiscardResult> {
    await this.requireIds(accountId, selection);
    return this.dataSource.transaction(async (manager) => {
      const matched = await this.matching(manager, accountId, selection);
      const rows = await this.take(manager, accountId, selection, 'discarded');
      return { discarded: rows.length, skipped: matched - rows.length };
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
    const { where, params } = conditionsOf(accountId, selection);
    const [row] = (await manager.query(
      `SELECT count(*)::int AS n FROM dead_letters WHERE ${where}`,
      params,
    )) as {
      n: number;
    }[];
    return row?.n ?? 0;
  }

  /** Moves up to MAX_SELECTED selected pending rows to `status`, oldest first; the rows moved. */
  private async take(
    manager: EntityManager,
    accountId: string,
    selection: DeadLetterSelection,
    status: 'replayed' | 'discarded',
  ): Promise<ReplayRow[]> {
    const { where, params } = conditionsOf(accountId, selection);
    const at = status === 'replayed' ? 'replayed_at' : 'discarded_at';
    return returnedRows<ReplayRow>(
      await manager.query(
        `UPDATE dead_letters SET status = '${status}', ${at} = now()
       WHERE status = 'pending' AND id IN (
         SELECT id FROM dead_letters WHERE ${where} AND status = 'pending'
         ORDER BY last_seen_at, id LIMIT ${MAX_SELECTED})
       RETURNING id, destination, target, origin, reason, record_key, record_value, kafka_partition, kafka_offset`,
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

  private toView(row: DeadLetterEntity, destinationName: string | null): DeadLetterView {
    return {
      id: row.id,
      destination: row.destination,
      destinationId: row.target,
      destinationName,
      reasonCode: row.reasonCode,
      reason: row.reason,
      attempts: row.attempts,
      permanent: row.permanent,
      deadLetterCount: row.deadLetterCount,
      firstSeenAt: iso(row.firstSeenAt),
      lastSeenAt: iso(row.lastSeenAt),
      status: row.status,
      replayedAt: isoOrNull(row.replayedAt),
      discardedAt: isoOrNull(row.discardedAt),
      messageIds: row.messageIds,
      ...eventsOf(row.recordValue),
    };
  }
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
