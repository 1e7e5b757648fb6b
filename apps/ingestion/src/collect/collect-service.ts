import { isAppError } from '@pipeline/errors';
import { validateEvent, type OutboxEnvelope, type PlanVerdict, type TrackingEvent } from '@pipeline/events';
import type { Logger } from '@pipeline/logger';
import { originAllowed, type WriteKeyRecord } from '@pipeline/tenancy';
import type { PlanPolicy } from '@pipeline/tracking-plans';
import type { WriteKeyAuthenticator } from '../auth/write-key-authenticator';
import type { DebugRecorder } from '../debugger/debug-recorder';
import type {
  AuthAttemptLimiter,
  LimitDecision,
  LocalBackstop,
  SharedRateLimiter,
} from '../limits/rate-limits';
import { IngestionMetrics } from '../metrics/ingestion-metrics';
import type { BatchDedupe } from '../outbox/batch-dedupe';
import { outboxMessages } from '../outbox/outbox-messages';
import type { OutboxPublisher } from '../outbox/outbox-publisher';
import { batchReceipt, deliveryCount } from './batch-receipt';
import { findWriteKey, type CollectRequest } from './collect-request';
import { ingestionErrors, type EventErrors } from './ingestion-errors';
import type { PlanDoor } from './plan-door';
import type { RegulationDoor } from './regulation-door';

export interface RequestFacts {
  headers: Record<string, string | string[] | undefined>;
  ip: string | null;
  userAgent: string | null;
  origin: string | undefined;
  receivedAt: Date;
  /** performance.now() on receipt: the start of pipeline_ingestion_publish_duration_seconds. */
  startedAt: number;
  /**
   * The tenant of the key in a header, when it was checked before the body was parsed
   * (pipelineEndpoint): validate() takes it instead of looking the key up again.
   */
  headerTenant?: WriteKeyRecord;
}

export interface ValidatedBatch {
  tenant: WriteKeyRecord;
  events: TrackingEvent[];
  received: number;
  errors: EventErrors[];
  /** What the server knew on receipt, shared by every event of the request. */
  receipt: Omit<OutboxEnvelope, 'events'>;
  batchId: string;
  /** The body's size (see toOutboxEnvelopes). */
  bodyBytes: number;
  /** Where each of `events` was in the request's events (the debugger's indexes). */
  eventIndexes: number[];
}

/** What the plan door decided for the events committed: `verdicts[i]` is for the request's event `indexes[i]`. */
export interface RequestVerdicts {
  planId: string;
  /** The binding's policy: the debugger shows the action it takes on each event recorded. */
  policy: PlanPolicy;
  indexes: readonly number[];
  verdicts: readonly PlanVerdict[];
}

/** Static mode's synchronous delivery: the result per destination, or delivery_unavailable. */
export interface StaticDelivery {
  deliver(batch: ValidatedBatch): Promise<Record<string, { rows: number }>>;
}

export interface CollectDependencies {
  authenticator: WriteKeyAuthenticator;
  logger: Logger;
  /** Hosted mode. */
  hosted?: {
    publisher: OutboxPublisher;
    dedupe: BatchDedupe;
    backstop: LocalBackstop;
    shared: SharedRateLimiter;
    authAttempts: AuthAttemptLimiter;
    /** Privacy regulations at the door; unset: every valid event is committed. */
    regulations?: RegulationDoor;
    /** Tracking plans at the door; unset: no event gets a verdict, whatever its key binds. */
    plans?: PlanDoor;
  };
  /** Static mode. */
  staticDelivery?: StaticDelivery;
  /** Unset: counted on a registry nobody reads. */
  metrics?: IngestionMetrics;
  /** The live debugger's recorder (docs/tracking-api.md, "Debugger"); unset: nothing recorded. */
  recorder?: DebugRecorder;
}

export interface CollectResponse {
  status: number;
  body: Record<string, unknown>;
  /** The request's events: acknowledged, and refused one by one (pipeline_ingestion_events_total). */
  events?: { accepted: number; invalid: number };
}

export class CollectService {
  readonly metrics: IngestionMetrics;

  constructor(private readonly deps: CollectDependencies) {
    this.metrics = deps.metrics ?? new IngestionMetrics();
  }

  private enforce(decision: LimitDecision): void {
    if (decision.allowed) return;
    this.metrics.rateLimited(decision.limitType);
    throw ingestionErrors.rateLimited(decision.limitType, decision.retryAfter);
  }

  /**
   * The tenant of a write key, as every route checks it: the per-IP limit on lookups of keys
   * not known to be valid, the key itself, and the request's Origin.
   */
  async authenticate(
    writeKey: string,
    facts: RequestFacts,
    options: { countAuthAttempts: boolean },
  ): Promise<WriteKeyRecord> {
    const { authenticator, hosted } = this.deps;
    if (hosted && options.countAuthAttempts && !authenticator.isKnownValid(writeKey)) {
      this.enforce(await hosted.authAttempts.take(facts.ip ?? 'unknown'));
    }
    const tenant = await authenticator.authenticate(writeKey);
    if (!originAllowed(facts.origin, tenant.allowedOrigins)) throw ingestionErrors.originNotAllowed();
    return tenant;
  }

  /** Authenticates and validates a request: everything /collect and /admin/simulate share. */
  async validate(
    request: CollectRequest,
    facts: RequestFacts,
    options: { countAuthAttempts: boolean; onTenant?: (tenant: WriteKeyRecord) => void },
  ): Promise<ValidatedBatch> {
    const writeKey = findWriteKey(facts.headers, request.bodyWriteKey);
    if (!writeKey) throw ingestionErrors.missingWriteKey();
    // A key in a header comes first in findWriteKey: the one already checked, if it was.
    const tenant = facts.headerTenant ?? (await this.authenticate(writeKey, facts, options));
    options.onTenant?.(tenant);
    request.completeEvents?.();

    const events: TrackingEvent[] = [];
    const eventIndexes: number[] = [];
    const errors: EventErrors[] = [];
    request.events.forEach((input, index) => {
      const result = validateEvent(input, request.bodyBytes, request.dialect);
      if (result.valid) {
        events.push(result.event);
        eventIndexes.push(index);
      } else errors.push({ index, errors: result.errors });
    });
    if (events.length === 0) throw ingestionErrors.noValidEvents(errors);

    const receipt = batchReceipt(tenant, events, facts, request.batchSentAt);
    return {
      tenant,
      events,
      received: request.events.length,
      errors,
      receipt,
      batchId: receipt.batchId,
      bodyBytes: request.bodyBytes,
      eventIndexes,
    };
  }

  async collect(request: CollectRequest, facts: RequestFacts): Promise<CollectResponse> {
    const { recorder } = this.deps;
    if (!recorder) return this.commit(request, facts);
    if (!recorder.available) {
      recorder.unavailable(request.events.length);
      return this.commit(request, facts);
    }
    let tenant: WriteKeyRecord | undefined;
    let eventErrors: EventErrors[] = [];
    let hidden: ReadonlySet<number> | undefined;
    let planned: RequestVerdicts | undefined;
    try {
      const result = await this.commit(
        request,
        facts,
        (t) => (tenant = t),
        (errors, regulated) => {
          eventErrors = errors;
          hidden = regulated;
        },
        (verdicts) => (planned = verdicts),
      );
      if (tenant)
        recorder.recordEvents(
          tenant.writeKeyId,
          facts.headers,
          facts.receivedAt,
          request.events,
          eventErrors,
          undefined,
          hidden,
          planned,
        );
      return result;
    } catch (error) {
      if (tenant) {
        // no_valid_events lists every event's errors; any other refusal applies to all of them.
        const isNoValid = isAppError(error) && error.code === 'no_valid_events';
        const listed = isNoValid
          ? ((error.details?.details as EventErrors[] | undefined) ?? [])
          : eventErrors;
        recorder.recordEvents(
          tenant.writeKeyId,
          facts.headers,
          facts.receivedAt,
          request.events,
          listed,
          isNoValid ? undefined : error,
          hidden,
        );
      }
      throw error;
    }
  }

  /**
   * A request of a known write key whose body could not be read (the debugger's one item for
   * it). The write key can only come from the headers; checked as /collect checks it. Never throws.
   */
  recordUnreadRequest(facts: RequestFacts, error: unknown): void {
    const { recorder } = this.deps;
    if (!recorder?.available || !isAppError(error) || error.status >= 500 || error.status === 429) return;
    const writeKey = findWriteKey(facts.headers, undefined);
    if (!writeKey) return;
    this.authenticate(writeKey, facts, { countAuthAttempts: true }).then(
      (tenant) => recorder.recordUnreadRequest(tenant.writeKeyId, facts.headers, facts.receivedAt, error),
      () => undefined,
    );
  }

  private async commit(
    request: CollectRequest,
    facts: RequestFacts,
    onTenant?: (tenant: WriteKeyRecord) => void,
    onValidated?: (errors: EventErrors[], regulated?: ReadonlySet<number>) => void,
    onVerdicts?: (verdicts: RequestVerdicts) => void,
  ): Promise<CollectResponse> {
    const batch = await this.validate(request, facts, { countAuthAttempts: true, onTenant });
    const door = this.deps.hosted?.regulations;
    // Events a privacy regulation names are answered as if accepted and never committed: the
    // answer, limits and dedupe are what they would have been (docs/tracking-api.md, "Suppressed subjects").
    const regulated = door
      ? await door.regulated(batch.tenant.accountId, batch.events, facts.receivedAt)
      : [];
    onValidated?.(
      batch.errors,
      regulated.length > 0 ? new Set(regulated.map((i) => batch.eventIndexes[i] as number)) : undefined,
    );
    const summary = {
      ok: true,
      received: batch.received,
      invalid: batch.errors.length,
      errors: batch.errors,
    };
    const events = { accepted: batch.events.length, invalid: batch.errors.length };
    const { hosted, staticDelivery } = this.deps;
    if (staticDelivery) {
      // Static mode: no rate limits; delivered before the answer.
      const inserted = await staticDelivery.deliver(batch);
      return { status: 200, body: { ...summary, inserted }, events };
    }
    if (!hosted) throw new Error('CollectService needs a hosted or a static configuration');

    const { tenant } = batch;
    this.enforce(hosted.backstop.take(tenant.writeKeyId, batch.events.length));
    // The dedupe check rides along with the shared limits: one round trip to the store.
    const shared = await hosted.shared.take(
      tenant.writeKeyId,
      batch.events.length,
      tenant.rateLimits,
      hosted.dedupe.keyOf(tenant.writeKeyId, batch.batchId),
    );
    this.enforce(shared);
    const deliveries = deliveryCount(tenant);
    if (deliveries === 0) throw ingestionErrors.durableIngressUnavailable('no_enabled_destination', 60);

    const accepted = { ...summary, accepted: true, batchId: batch.batchId, deliveryCount: deliveries };
    if (shared.exists ?? (await hosted.dedupe.seen(tenant.writeKeyId, batch.batchId))) {
      this.metrics.dedupeHit();
      return { status: 202, body: { ...accepted, deduplicated: true }, events };
    }
    const committed = regulated.length > 0 ? withoutIndexes(batch.events, regulated) : batch.events;
    this.metrics.eventsSuppressed(regulated.length);
    if (committed.length > 0) {
      // Checked once the batch is to be committed: a refused or deduplicated request costs no
      // validation. The answer is the same whatever the verdicts (docs/tracking-plans.md).
      const binding = tenant.trackingPlan;
      const planned =
        binding && hosted.plans
          ? await hosted.plans.verdicts(tenant.accountId, binding, committed)
          : undefined;
      const messages = planned
        ? outboxMessages(
            { ...batch.receipt, plan: planned.plan },
            committed,
            batch.bodyBytes,
            planned.verdicts,
          )
        : outboxMessages(batch.receipt, committed, batch.bodyBytes);
      try {
        await hosted.publisher.publish(messages);
      } catch (error) {
        this.deps.logger.error('outbox publish failed', {
          error: (error as Error).message,
          batchId: batch.batchId,
        });
        throw ingestionErrors.durableIngressUnavailable('outbox_unavailable', 5);
      }
      this.metrics.published(facts.startedAt);
      if (planned) {
        hosted.plans?.count(
          tenant.accountId,
          tenant.writeKeyId,
          planned.plan.planId,
          committed,
          planned.verdicts,
          batch.receipt.receivedAt,
        );
        // Looked up only for the events the debugger records (most requests: none).
        onVerdicts?.({
          planId: planned.plan.planId,
          policy: planned.plan.policy,
          indexes: regulated.length > 0 ? withoutIndexes(batch.eventIndexes, regulated) : batch.eventIndexes,
          verdicts: planned.verdicts,
        });
      }
    }
    // Not awaited: the batch is durable once published, and the mark only spares a retry a
    // second publish. Queued before the answer leaves, it is stored before a retry's take is
    // read (SharedStoreBatch stores a call's marks first); it never rejects (BatchDedupe).
    void hosted.dedupe.remember(tenant.writeKeyId, batch.batchId);
    return { status: 202, body: { ...accepted, deduplicated: false }, events };
  }
}

/** `items` without those at `indexes` (ascending). */
function withoutIndexes<T>(items: readonly T[], indexes: readonly number[]): T[] {
  const dropped = new Set(indexes);
  return items.filter((_, index) => !dropped.has(index));
}
