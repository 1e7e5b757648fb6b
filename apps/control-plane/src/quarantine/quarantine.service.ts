import { randomUUID } from 'node:crypto';
import type { DataSource, EntityManager } from 'typeorm';
import { AppError } from '@pipeline/errors';
import { envelopeWith, parseOutboxEnvelope, type OutboxEnvelope, type TrackingEvent } from '@pipeline/events';
import type { ReplayableLetter } from '@pipeline/destinations';
import {
  compilePlan,
  decideEvent,
  ruleVersionPin,
  violationCodes,
  type CompiledPlan,
  type Violation,
  WAREHOUSE_DESTINATION,
} from '@pipeline/tracking-plans';
import { invalidField } from '../http/api-errors';
import { isUuid } from '../http/ids';
import { iso, isoOrNull } from '../http/list-query';
import { listResponse, type ListResponse, type PageRequest } from '../http/pagination';
import { defaultDeadLetterLimits, type DeadLetterLimits } from '../dead-letters/dead-letter-limits';
import { AccountReplayLimiter } from '../dead-letters/dead-letter-replay-limits';
import type { DeadLetterReplayer } from '../dead-letters/dead-letter-replayer';
import { retentionCutoff } from '../dead-letters/dead-letter-retention';
import {
  deadLettersUnavailable,
  readRecord,
  readRecords,
  replayRateLimited,
} from '../dead-letters/dead-letter.service';
import type { TrackingPlanService } from '../tracking-plans/tracking-plan.service';
import type {
  QuarantineDiscardResult,
  QuarantinedEventDetail,
  QuarantinedEventView,
  QuarantineReplayBody,
  QuarantineReplayResult,
  QuarantineSelectionBody,
  QuarantineStatus,
} from './quarantine.dto';

/** Events one replay or discard takes at most; a larger selection is taken by calling again. */
export const MAX_QUARANTINE_SELECTED = 1000;

/** A filter as the service takes it: times parsed, every field checked. */
export interface QuarantineFilter {
  ids?: string[];
  planId?: string;
  writeKeyId?: string;
  destination?: string;
  destinationId?: string;
  code?: string;
  name?: string;
  since?: Date;
  until?: Date;
}

const timeOf = (field: string, value: string | undefined): Date | undefined => {
  if (value === undefined) return undefined;
  const at = new Date(value);
  if (Number.isNaN(at.getTime())) throw invalidField(field, 'must be an ISO 8601 time');
  return at;
};

/** A selection of the API (query or body) as a filter, or 400 naming the field that is wrong. */
export function quarantineFilterOf(
  selection: QuarantineSelectionBody,
  where: 'query' | 'body',
): QuarantineFilter {
  if (selection.ids?.some((id) => !isUuid(id)))
    throw invalidField(`${where}.ids`, 'must be quarantined event ids (UUIDs)');
  if (selection.code !== undefined && !(violationCodes as readonly string[]).includes(selection.code))
    throw invalidField(`${where}.code`, `must be one of ${violationCodes.join(', ')}`);
  if (
    where === 'body' &&
    !(
      [
        'ids',
        'planId',
        'writeKeyId',
        'destination',
        'destinationId',
        'code',
        'name',
        'since',
        'until',
      ] as const
    ).some((field) => selection[field] !== undefined)
  )
    throw new AppError(
      400,
      'quarantine_selector_required',
      'Name the events: ids, or a filter (planId, writeKeyId, destination, destinationId, code, name, since, until)',
    );
  const since = timeOf(`${where}.since`, selection.since);
  const until = timeOf(`${where}.until`, selection.until);
  const { ids, planId, writeKeyId, destination, destinationId, code, name } = selection;
  return {
    ...(ids ? { ids } : {}),
    ...(planId !== undefined ? { planId } : {}),
    ...(writeKeyId !== undefined ? { writeKeyId } : {}),
    ...(destination !== undefined ? { destination } : {}),
    ...(destinationId !== undefined ? { destinationId } : {}),
    ...(code !== undefined ? { code } : {}),
    ...(name !== undefined ? { name } : {}),
    ...(since ? { since } : {}),
    ...(until ? { until } : {}),
  };
}

/** The status a quarantined event shows: its own, or its dead letter's when that was replayed or discarded as a whole. */
const effectiveStatus = `CASE WHEN q.status <> 'quarantined' THEN q.status WHEN d.status = 'pending' THEN 'quarantined' ELSE d.status END`;
/** Still held: neither the event nor its dead letter was replayed or discarded. */
const held = `q.status = 'quarantined' AND d.status = 'pending'`;

function conditionsOf(
  accountId: string,
  filter: QuarantineFilter,
  keptSince: Date,
): { where: string; params: unknown[] } {
  const params: unknown[] = [accountId, keptSince];
  // An event goes with its dead letter: past the retention it is out before the sweep deletes it.
  const where = ['q.account_id = $1', 'd.last_seen_at >= $2'];
  const add = (sql: (n: string) => string, value: unknown) => {
    params.push(value);
    where.push(sql(`$${params.length}`));
  };
  if (filter.ids) add((n) => `q.id = ANY(${n}::uuid[])`, filter.ids);
  if (filter.planId !== undefined) add((n) => `q.plan_id = ${n}`, filter.planId);
  if (filter.writeKeyId !== undefined) add((n) => `q.write_key_id = ${n}`, filter.writeKeyId);
  if (filter.destination !== undefined) add((n) => `q.destination = ${n}`, filter.destination);
  if (filter.destinationId !== undefined) add((n) => `q.target = ${n}`, filter.destinationId);
  if (filter.code !== undefined) add((n) => `${n} = ANY(q.codes)`, filter.code);
  if (filter.name !== undefined) add((n) => `q.event_name = ${n}`, filter.name);
  if (filter.since) add((n) => `q.received_at >= ${n}`, filter.since);
  if (filter.until) add((n) => `q.received_at < ${n}`, filter.until);
  return { where: where.join(' AND '), params };
}

interface ViewRow {
  id: string;
  message_id: string;
  write_key_id: string | null;
  destination: string;
  target: string;
  plan_id: string;
  plan_version: number | null;
  event_type: string;
  event_name: string | null;
  codes: string[];
  violations: string;
  received_at: Date;
  first_seen_at: Date;
  status: QuarantineStatus;
  replayed_at: Date | null;
  replayed_version: number | null;
  discarded_at: Date | null;
  dead_letter_id: string;
  position: number;
}

const viewColumns = `q.id, q.message_id, q.write_key_id, q.destination, q.target, q.plan_id, q.plan_version,
  q.event_type, q.event_name, q.codes, q.violations, q.received_at, d.first_seen_at, ${effectiveStatus} AS status,
  COALESCE(q.replayed_at, CASE WHEN q.status = 'quarantined' AND d.status = 'replayed' THEN d.replayed_at END) AS replayed_at,
  q.replayed_version,
  COALESCE(q.discarded_at, CASE WHEN q.status = 'quarantined' AND d.status = 'discarded' THEN d.discarded_at END) AS discarded_at,
  q.dead_letter_id, q.position`;

const viewOf = (row: ViewRow): QuarantinedEventView => ({
  id: row.id,
  messageId: row.message_id,
  writeKeyId: row.write_key_id,
  destination: row.destination,
  destinationId: row.target,
  planId: row.plan_id,
  planVersion: row.plan_version,
  type: row.event_type,
  name: row.event_name,
  codes: row.codes,
  violations: JSON.parse(row.violations) as Violation[],
  receivedAt: iso(row.received_at),
  quarantinedAt: iso(row.first_seen_at),
  status: row.status,
  replayedAt: isoOrNull(row.replayed_at),
  replayedVersion: row.replayed_version,
  discardedAt: isoOrNull(row.discarded_at),
  deadLetterId: row.dead_letter_id,
});

const notFound = (id: string) =>
  new AppError(404, 'quarantined_event_not_found', `No quarantined event with id ${id}`);

export interface QuarantineServiceOptions {
  /** The dead letters' retention (the quarantine is a view of them). */
  limits?: Pick<DeadLetterLimits, 'retentionDays' | 'replaysPerMinute'>;
  /** Counted with the dead letters' replays (DEAD_LETTER_REPLAYS_PER_MINUTE). */
  replayLimiter?: AccountReplayLimiter;
}

/**
 * Dead letters a replay reads per query: their records come whole to the control plane, so
 * the 1000 letters a replay may take are read in chunks of this many.
 */
const LETTERS_PER_READ = 100;

/** A selected event of a replay, its dead letter's record read once for all of its events. */
interface TakenEvent {
  id: string;
  dead_letter_id: string;
  position: number;
}

interface LetterRow {
  id: string;
  destination: string;
  target: string;
  origin: string;
  reason: string;
  record_key: Buffer | null;
  kafka_partition: number;
  kafka_offset: string;
}

/**
 * The quarantine (docs/tracking-plans.md, "Quarantine"): the events tracking plans' policies
 * kept out of destinations, as the dead-letter index keeps them. A replay checks each event
 * again against a published version and puts back for delivery, with its message id, only those
 * that now pass its destination's policy; a second replay finds them replayed and adds nothing.
 */
export class QuarantineService {
  private readonly limits: Pick<DeadLetterLimits, 'retentionDays' | 'replaysPerMinute'>;
  private readonly replayLimiter: AccountReplayLimiter;

  constructor(
    private readonly dataSource: DataSource,
    private readonly trackingPlans: TrackingPlanService,
    /** Absent (no Kafka in this graph): replays answer 503 `dead_letters_unavailable`. */
    private readonly replayer?: DeadLetterReplayer,
    options: QuarantineServiceOptions = {},
  ) {
    this.limits = options.limits ?? defaultDeadLetterLimits;
    this.replayLimiter = options.replayLimiter ?? new AccountReplayLimiter(this.limits.replaysPerMinute);
  }

  private conditions(accountId: string, filter: QuarantineFilter) {
    return conditionsOf(accountId, filter, retentionCutoff(this.limits.retentionDays, new Date()));
  }

  async list(
    accountId: string,
    filter: QuarantineFilter,
    status: QuarantineStatus,
    page: PageRequest,
  ): Promise<ListResponse<QuarantinedEventView>> {
    const { where, params } = this.conditions(accountId, filter);
    params.push(status);
    const filtered = `FROM quarantined_events q JOIN dead_letters d ON d.id = q.dead_letter_id
      WHERE ${where} AND ${effectiveStatus} = $${params.length}`;
    const [counted] = (await this.dataSource.query(`SELECT count(*)::int AS n ${filtered}`, params)) as {
      n: number;
    }[];
    const rows: ViewRow[] = await this.dataSource.query(
      `SELECT ${viewColumns} ${filtered} ORDER BY q.received_at DESC, q.id DESC LIMIT ${page.limit} OFFSET ${page.offset}`,
      params,
    );
    return listResponse(rows.map(viewOf), counted?.n ?? 0, page);
  }

  /** One quarantined event with the event itself, read from its dead letter's record. */
  async get(accountId: string, id: string): Promise<QuarantinedEventDetail> {
    if (!isUuid(id)) throw notFound(id);
    const { where, params } = this.conditions(accountId, { ids: [id] });
    const [row] = (await this.dataSource.query(
      `SELECT ${viewColumns} FROM quarantined_events q JOIN dead_letters d ON d.id = q.dead_letter_id WHERE ${where}`,
      params,
    )) as ViewRow[];
    if (!row) throw notFound(id);
    const envelope = parseOutboxEnvelope(await readRecord(this.dataSource.manager, row.dead_letter_id));
    const event = envelope?.events[row.position];
    if (!event) throw notFound(id);
    return { ...viewOf(row), event: event as unknown as Record<string, unknown> };
  }

  /**
   * Checks the selected held events again and replays those that now pass, at most
   * MAX_QUARANTINE_SELECTED per call, in one transaction: the events are locked (a concurrent
   * replay waits, then finds them taken), the records are sent (acks -1), then it commits. A
   * failed send answers 503 and changes nothing.
   */
  async replay(accountId: string, body: QuarantineReplayBody): Promise<QuarantineReplayResult> {
    const replayer = this.replayer;
    if (!replayer) throw deadLettersUnavailable(0);
    if (body.version !== undefined && body.planId === undefined)
      throw invalidField('body.planId', 'a version is one plan’s: name the plan');
    const filter = quarantineFilterOf(body, 'body');
    await this.requireIds(accountId, filter);
    // 404 before anything is taken: a version that does not exist checks nothing.
    if (body.version !== undefined && body.planId !== undefined)
      await this.trackingPlans.versionRecord(accountId, body.planId, body.version);
    const decision = await this.replayLimiter.take(accountId);
    if (!decision.allowed) throw replayRateLimited(decision.retryAfterSeconds, this.replayLimiter.perMinute);
    const matched = await this.count(this.dataSource.manager, accountId, filter);
    return this.dataSource.transaction(async (manager) => {
      const taken = await this.take(manager, accountId, filter);
      const plans = new Map<string, Promise<CompiledPlan | null>>();
      const compiledOf = (planId: string): Promise<CompiledPlan | null> => {
        let compiled = plans.get(planId);
        if (!compiled) plans.set(planId, (compiled = this.compiled(accountId, planId, body.version)));
        return compiled;
      };
      const byLetter = new Map<string, TakenEvent[]>();
      for (const event of taken) {
        const events = byLetter.get(event.dead_letter_id) ?? [];
        events.push(event);
        byLetter.set(event.dead_letter_id, events);
      }
      const passed: { id: string; version: number }[] = [];
      let stillQuarantined = 0;
      const byKind = new Map<string, ReplayableLetter[]>();
      const replayId = randomUUID();
      const letterIds = [...byLetter.keys()];
      // The letters and their records read a chunk at a time, not one each: a bounded number
      // of queries, and a chunk's records in memory at once, not the whole selection's.
      for (let at = 0; at < letterIds.length; at += LETTERS_PER_READ) {
        const chunk = letterIds.slice(at, at + LETTERS_PER_READ);
        const rows = (await manager.query(
          `SELECT id, destination, target, origin, reason, record_key, kafka_partition, kafka_offset
           FROM dead_letters WHERE id = ANY($1::uuid[])`,
          [chunk],
        )) as LetterRow[];
        const letterRows = new Map(rows.map((row) => [row.id, row]));
        const records = await readRecords(manager, chunk);
        for (const deadLetterId of chunk) {
          const events = byLetter.get(deadLetterId) ?? [];
          const letter = letterRows.get(deadLetterId);
          const record = records.get(deadLetterId);
          const envelope = record ? parseOutboxEnvelope(record) : null;
          const compiled = envelope?.plan ? await compiledOf(envelope.plan.planId) : null;
          if (!letter || !envelope?.plan || !compiled) {
            // Its plan has no published version any more (deleted): nothing to check it against;
            // it stays held and is counted as skipped.
            continue;
          }
          const destination =
            letter.destination === WAREHOUSE_DESTINATION ? WAREHOUSE_DESTINATION : letter.target;
          const passing: { position: number; violations: Violation[] }[] = [];
          for (const event of events) {
            const found = envelope.events[event.position] as TrackingEvent | undefined;
            if (!found) continue;
            const record = found as unknown as Record<string, unknown>;
            const violations = compiled.validate(record, ruleVersionPin(record));
            if (decideEvent(violations, envelope.plan.policy, destination).action === 'quarantine')
              stillQuarantined += 1;
            else {
              passing.push({ position: event.position, violations });
              passed.push({ id: event.id, version: compiled.meta.version });
            }
          }
          if (passing.length === 0) continue;
          passing.sort((a, b) => a.position - b.position);
          const replayed: OutboxEnvelope = {
            ...envelopeWith(
              envelope,
              passing.map((p) => p.position),
            ),
            plan: { ...envelope.plan, version: compiled.meta.version },
            verdicts: passing.map((p) => ({ version: compiled.meta.version, violations: p.violations })),
          };
          const letters = byKind.get(letter.destination) ?? [];
          letters.push({
            partition: letter.kafka_partition,
            offset: letter.kafka_offset,
            key: letter.record_key,
            value: Buffer.from(JSON.stringify(replayed)),
            target: letter.target,
            reason: letter.reason,
            // Its own origin: if it is dead-lettered again, it is a new dead letter, and the
            // events still held in this one stay as they are.
            origin: `${letter.origin}#quarantine-replay-${replayId}`,
          });
          byKind.set(letter.destination, letters);
        }
      }
      if (byKind.size > 0) {
        try {
          await replayer.replay(byKind);
        } catch (error) {
          throw deadLettersUnavailable(0, error);
        }
      }
      for (const version of new Set(passed.map((p) => p.version)))
        await manager.query(
          `UPDATE quarantined_events SET status = 'replayed', replayed_at = now(), replayed_version = $2
           WHERE id = ANY($1::uuid[])`,
          [passed.filter((p) => p.version === version).map((p) => p.id), version],
        );
      await this.settleLetters(manager, [...byLetter.keys()]);
      return {
        replayed: passed.length,
        stillQuarantined,
        skipped: Math.max(0, matched - passed.length - stillQuarantined),
      };
    });
  }

  /** Marks the selected held events discarded: no replay takes them. */
  async discard(accountId: string, body: QuarantineSelectionBody): Promise<QuarantineDiscardResult> {
    const filter = quarantineFilterOf(body, 'body');
    await this.requireIds(accountId, filter);
    return this.dataSource.transaction(async (manager) => {
      const matched = await this.count(manager, accountId, filter);
      const taken = await this.take(manager, accountId, filter);
      await manager.query(
        `UPDATE quarantined_events SET status = 'discarded', discarded_at = now() WHERE id = ANY($1::uuid[])`,
        [taken.map((t) => t.id)],
      );
      await this.settleLetters(manager, [...new Set(taken.map((t) => t.dead_letter_id))]);
      return { discarded: taken.length, skipped: matched - taken.length };
    });
  }

  /** The plan version to check against: `version`, or the plan's latest; null when the plan has none. */
  private async compiled(
    accountId: string,
    planId: string,
    version: number | undefined,
  ): Promise<CompiledPlan | null> {
    let wanted = version;
    if (wanted === undefined) {
      if (!isUuid(planId)) return null;
      const [row] = (await this.dataSource.query(
        `SELECT max(v.version) AS version FROM tracking_plan_versions v
         JOIN tracking_plans p ON p.id = v.plan_id WHERE p.account_id = $1 AND v.plan_id = $2`,
        [accountId, planId.toLowerCase()],
      )) as { version: number | null }[];
      if (!row?.version) return null;
      wanted = row.version;
    }
    const record = await this.trackingPlans.versionRecord(accountId, planId, wanted);
    return compilePlan(record.plan, { planId: record.planId, version: record.version });
  }

  /** The held events a selection matches (the whole selection, before the per-call cap). */
  private async count(manager: EntityManager, accountId: string, filter: QuarantineFilter): Promise<number> {
    const { where, params } = this.conditions(accountId, filter);
    const [row] = (await manager.query(
      `SELECT count(*)::int AS n FROM quarantined_events q JOIN dead_letters d ON d.id = q.dead_letter_id
       WHERE ${where} AND ${held}`,
      params,
    )) as { n: number }[];
    return row?.n ?? 0;
  }

  /** Locks up to MAX_QUARANTINE_SELECTED held events of a selection, oldest first, and their dead letters. */
  private async take(
    manager: EntityManager,
    accountId: string,
    filter: QuarantineFilter,
  ): Promise<TakenEvent[]> {
    const { where, params } = this.conditions(accountId, filter);
    const rows = (await manager.query(
      `SELECT q.id, q.dead_letter_id, q.position FROM quarantined_events q
       JOIN dead_letters d ON d.id = q.dead_letter_id
       WHERE ${where} AND ${held}
       ORDER BY q.received_at, q.id LIMIT ${MAX_QUARANTINE_SELECTED} FOR UPDATE OF q, d`,
      params,
    )) as TakenEvent[];
    // A concurrent call that took them first committed before the lock was granted.
    return rows;
  }

  /**
   * Dead letters none of whose events is held any more are done: `replayed` when any of them
   * was, else `discarded`. The dead-letter list then shows them so, and no dead-letter replay
   * sends them again.
   */
  private async settleLetters(manager: EntityManager, deadLetterIds: string[]): Promise<void> {
    if (deadLetterIds.length === 0) return;
    await manager.query(
      `UPDATE dead_letters d SET
         status = CASE WHEN EXISTS (SELECT 1 FROM quarantined_events q WHERE q.dead_letter_id = d.id AND q.status = 'replayed')
                       THEN 'replayed' ELSE 'discarded' END,
         replayed_at = CASE WHEN EXISTS (SELECT 1 FROM quarantined_events q WHERE q.dead_letter_id = d.id AND q.status = 'replayed')
                            THEN now() END,
         discarded_at = CASE WHEN NOT EXISTS (SELECT 1 FROM quarantined_events q WHERE q.dead_letter_id = d.id AND q.status = 'replayed')
                             THEN now() END
       WHERE d.id = ANY($1::uuid[]) AND d.status = 'pending'
         AND NOT EXISTS (SELECT 1 FROM quarantined_events q WHERE q.dead_letter_id = d.id AND q.status = 'quarantined')`,
      [deadLetterIds],
    );
  }

  /** 404 `quarantined_event_not_found` when an id is not one of the account's: nothing is done. */
  private async requireIds(accountId: string, filter: QuarantineFilter): Promise<void> {
    if (!filter.ids) return;
    const found: { id: string }[] = await this.dataSource.query(
      'SELECT id FROM quarantined_events WHERE account_id = $1 AND id = ANY($2::uuid[])',
      [accountId, filter.ids],
    );
    const known = new Set(found.map((row) => row.id));
    const missing = filter.ids.filter((id) => !known.has(id));
    if (missing[0] !== undefined) throw notFound(missing.slice(0, 5).join(', '));
  }
}
