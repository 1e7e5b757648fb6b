import {
  consentAllows,
  envelopeWith,
  integrationAllows,
  parseOutboxEnvelope,
  receiptContextOf,
  type OutboxEnvelope,
  type TrackingEvent,
} from '@pipeline/events';
import {
  bulkhead,
  BrokenCircuitError,
  circuitBreaker,
  CircuitState,
  ConsecutiveBreaker,
  handleWhen,
  type CircuitBreakerPolicy,
} from 'cockatiel';
import { LRUCache } from 'lru-cache';
import type { Logger } from '@pipeline/logger';
import type { ResolvedDestination } from '@pipeline/tenancy';
import {
  DestinationUnavailable,
  notAnEnvelope,
  retryTargetOf,
  type DeliveryMessage,
  type DeliveryReport,
  type Destination,
  type FailedDelivery,
} from '../destination';
import { omitPaths } from '@pipeline/tracking-plans';
import { recordOutcome, recordSentOutcomes, type OutcomeRecorder, type SentEvent } from '../outcome-recorder';
import { planDecision, quarantineReason } from '../plan-decisions';
import type { TenantDirectory } from '../tenant-directory';
import { applyBound, functionLabel, type FunctionStep } from '../functions/function-step';
import { DeliveryFailure } from './delivery-failure';
import type { Forwarder, OutboundEvent } from './forwarder';

/** How one batch shares its time and the vendors' health among the tenants in it. */
export interface ForwardingLimits {
  /** The whole batch's time; integrations still sending then park their rest for a retry. */
  batchBudgetMs: number;
  /** One integration's time within a batch. */
  integrationBudgetMs: number;
  /** Integrations of one batch sent at once. */
  concurrency: number;
  /** Consecutive failed sends that open an integration's circuit. */
  breakerFailures: number;
  /** How long an open circuit parks records without calling the vendor before one probe. */
  breakerCooldownMs: number;
}

export const defaultForwardingLimits: ForwardingLimits = {
  batchBudgetMs: 60_000,
  integrationBudgetMs: 20_000,
  concurrency: 4,
  breakerFailures: 5,
  breakerCooldownMs: 30_000,
};

/** A send the vendor did not take at all for a reason that may pass: what trips a breaker. */
const isOutage = (error: unknown): boolean =>
  error instanceof DeliveryFailure && error.retryable && error.sent === 0;

/** The events of one record bound for one target. */
interface Portion {
  message: DeliveryMessage;
  envelope: OutboxEnvelope;
  /** The events as this target gets them (without what a plan's `omit` strips). */
  events: TrackingEvent[];
  /** Each event's place in the record, by message id: a failure parks the record's own event. */
  indexOf: Map<string, number>;
  /** What the plan's `omit` stripped, by message id: the events stripped of something only. */
  omittedOf: Map<string, string[]>;
}

/**
 * `delivery --destination <app type>`: forwards each record's events to every integration of
 * the record's tenant whose destination app is of this type. Each integration (target) gets
 * the batch's events in one send, which the vendor client splits within the vendor's limits.
 * Events whose consent denies the destination's category are not sent (and counted); what a
 * target did not take comes back as failures, holding only that target's undelivered events.
 */
export class ForwardingDestination implements Destination {
  readonly kind: string;
  private readonly limits: ForwardingLimits;
  /** One circuit per integration, so one tenant's failing endpoint costs only its own records. */
  private readonly breakers = new LRUCache<string, CircuitBreakerPolicy>({ max: 10_000 });

  constructor(
    private readonly forwarder: Forwarder,
    private readonly tenants: TenantDirectory,
    private readonly logger: Logger,
    limits: Partial<ForwardingLimits> = {},
    private readonly outcomes?: OutcomeRecorder,
    /** Runs bound functions; without it, a destination with one has its records held, never sent untransformed. */
    private readonly functions?: FunctionStep,
  ) {
    this.kind = forwarder.appType;
    this.limits = { ...defaultForwardingLimits, ...limits };
  }

  /** The circuit state of an integration ('closed', 'open', 'half-open'), for metrics and tests. */
  circuitOf(integrationId: string): 'closed' | 'open' | 'half-open' {
    const state = this.breakers.get(integrationId)?.state;
    if (state === CircuitState.Open || state === CircuitState.Isolated) return 'open';
    return state === CircuitState.HalfOpen ? 'half-open' : 'closed';
  }

  /** Integrations whose circuit is open now (pipeline_delivery_circuits_open). */
  openCircuits(): number {
    let open = 0;
    // Iterating does not touch the entries' recency.
    for (const breaker of this.breakers.values())
      if (breaker.state === CircuitState.Open || breaker.state === CircuitState.Isolated) open += 1;
    return open;
  }

  private breakerFor(integrationId: string): CircuitBreakerPolicy {
    let breaker = this.breakers.get(integrationId);
    if (!breaker) {
      breaker = circuitBreaker(handleWhen(isOutage), {
        halfOpenAfter: this.limits.breakerCooldownMs,
        breaker: new ConsecutiveBreaker(this.limits.breakerFailures),
      });
      breaker.onBreak(() =>
        this.logger.warn('circuit opened: records park without calling the vendor', {
          destination: this.kind,
          target: integrationId,
          cooldownMs: this.limits.breakerCooldownMs,
        }),
      );
      breaker.onReset(() =>
        this.logger.info('circuit closed: the vendor answered a probe', {
          destination: this.kind,
          target: integrationId,
        }),
      );
      this.breakers.set(integrationId, breaker);
    }
    return breaker;
  }

  async deliver(messages: readonly DeliveryMessage[]): Promise<DeliveryReport> {
    const failed: FailedDelivery[] = [];
    const targets = new Map<string, { destination: ResolvedDestination; portions: Portion[] }>();
    let consentSkipped = 0;
    for (const message of messages) {
      const envelope = parseOutboxEnvelope(message.value);
      if (!envelope) {
        failed.push(notAnEnvelope(message, this.kind));
        continue;
      }
      let tenant;
      try {
        tenant = await this.tenants.forWriteKey(envelope.writeKeyId);
      } catch (error) {
        // The control plane cannot be asked: the batch is tried again once it can.
        throw new DestinationUnavailable(`tenant lookup failed: ${(error as Error).message}`, {
          cause: error,
        });
      }
      const only = retryTargetOf(message);
      const destinations = (tenant?.destinations ?? []).filter(
        (d) => d.appType === this.kind && (only === undefined || d.integrationId === only),
      );
      if (destinations.length === 0 && only !== undefined) {
        this.logger.info('retry dropped: the integration no longer delivers here', { target: only });
      }
      // Each event's place in the record, once per record for all of its destinations.
      const placeOf = new Map(envelope.events.map((event, index) => [event, index]));
      for (const destination of destinations) {
        // The event's own choice of destinations (Segment's `integrations`), then consent;
        // only the latter is counted as withheld by consent.
        const selected = envelope.events.filter((event) =>
          integrationAllows(destination.appType, event.integrations),
        );
        const events = selected.filter((event) => consentAllows(destination.kind, event.context?.consent));
        consentSkipped += selected.length - events.length;
        if (this.outcomes && events.length < selected.length) {
          recordOutcome(
            this.outcomes,
            envelope.writeKeyId,
            selected.filter((event) => !events.includes(event)).map((event) => event.messageId),
            {
              destination: this.kind,
              integrationId: destination.integrationId,
              outcome: 'consent_skipped',
              reason: `consent denies the ${destination.kind} category`,
            },
          );
        }
        const { sent, indexOf, omittedOf, quarantined } = underPlan(
          envelope,
          placeOf,
          events,
          destination.integrationId,
        );
        if (quarantined.length > 0)
          failed.push({
            message,
            value: Buffer.from(JSON.stringify(envelopeWith(envelope, quarantined))),
            target: destination.integrationId,
            reason: quarantineReason(envelope),
            retryable: false,
          });
        if (sent.length === 0) continue;
        const target = targets.get(destination.integrationId) ?? { destination, portions: [] };
        target.portions.push({ message, envelope, events: sent, indexOf, omittedOf });
        targets.set(destination.integrationId, target);
      }
    }

    let delivered = 0;
    const batchBudget = AbortSignal.timeout(this.limits.batchBudgetMs);
    const pool = bulkhead(this.limits.concurrency, Infinity);
    await Promise.all(
      [...targets].map(([target, { destination, portions: given }]) =>
        pool.execute(async () => {
          // The function runs within the integration's turn: a slow one delays its own integration.
          const portions = destination.function
            ? await this.applyFunction(target, destination.function, given, failed)
            : given;
          if (portions.length === 0) return;
          const outbound: OutboundEvent[] = [];
          // By messageId: a vendor client may hand back copies of the events it was given.
          const portionOf = new Map<string, Portion>();
          for (const portion of portions) {
            const receipt = receiptContextOf(portion.envelope);
            for (const event of portion.events) {
              const item = { event, receipt };
              outbound.push(item);
              portionOf.set(event.messageId, portion);
            }
          }
          const signal = AbortSignal.any([batchBudget, AbortSignal.timeout(this.limits.integrationBudgetMs)]);
          try {
            const outcome = await this.breakerFor(target).execute(() =>
              this.forwarder.send(destination, outbound, signal),
            );
            delivered += outcome.sent;
            if (this.outcomes) this.recordSent(target, outbound, portionOf, new Set(), outcome.skipped);
          } catch (error) {
            delivered += error instanceof DeliveryFailure ? error.sent : 0;
            if (this.outcomes && error instanceof DeliveryFailure && error.sent > 0) {
              // What the vendor took of a partly failed send; the rest is parked (retried / dead_lettered).
              const failed = new Set(
                error.undelivered.length > 0
                  ? error.undelivered.map((u) => u.event.event.messageId)
                  : outbound.slice(error.sent).map((item) => item.event.messageId),
              );
              this.recordSent(target, outbound, portionOf, failed, error.skipped ?? []);
            }
            if (error instanceof DeliveryFailure && error.detail !== undefined) {
              // The remote detail is for operators; the tenant-facing reason has none.
              this.logger.warn('send failed', { target, reason: error.reason, detail: error.detail });
            }
            failed.push(...this.failures(target, error, outbound, portionOf));
          }
        }),
      ),
    );
    return { delivered, consentSkipped, failed };
  }

  /**
   * The portions as the integration's bound function made them, one run per write key (its
   * `ctx` names the key). What the function failed on is parked in `failed`: an event it threw
   * on or answered badly is dead-lettered with the version in its reason; a batch it could not
   * finish is retried, and while the function is disabled its records are held. Output events
   * keep their input's place in the record, so a failure parks the input, as received.
   */
  private async applyFunction(
    target: string,
    bound: NonNullable<ResolvedDestination['function']>,
    portions: readonly Portion[],
    failed: FailedDelivery[],
  ): Promise<Portion[]> {
    const byWriteKey = new Map<string, Portion[]>();
    for (const portion of portions) {
      const group = byWriteKey.get(portion.envelope.writeKeyId) ?? [];
      group.push(portion);
      byWriteKey.set(portion.envelope.writeKeyId, group);
    }
    const transformed: Portion[] = [];
    for (const [writeKeyId, group] of byWriteKey) {
      const inputs = group.flatMap((portion) => portion.events.map((event) => ({ portion, event })));
      const step = await applyBound(
        this.functions,
        bound,
        inputs.map((input) => input.event),
        { kind: 'destination', destination: this.kind, integrationId: target, writeKeyId },
      );
      if (step.kind === 'failed') {
        for (const portion of group)
          failed.push({
            message: portion.message,
            value: Buffer.from(
              JSON.stringify(envelopeWith(portion.envelope, placesOf(portion, portion.events))),
            ),
            target,
            reason: step.reason,
            retryable: true,
            ...(step.retryAfterMs > 0 ? { retryAfterMs: step.retryAfterMs } : {}),
            ...(step.hold ? { holdUntilAvailable: true } : {}),
          });
        continue;
      }
      const next = new Map<Portion, Portion>();
      const refused = new Map<Portion, Map<string, TrackingEvent[]>>();
      const dropped: string[] = [];
      step.results.forEach((result, i) => {
        const { portion, event } = inputs[i] as (typeof inputs)[number];
        if (result.result === 'dropped') {
          dropped.push(event.messageId);
          return;
        }
        if (result.result === 'error') {
          const byReason = refused.get(portion) ?? new Map<string, TrackingEvent[]>();
          byReason.set(result.message, [...(byReason.get(result.message) ?? []), event]);
          refused.set(portion, byReason);
          return;
        }
        const out: Portion = next.get(portion) ?? {
          ...portion,
          events: [],
          indexOf: new Map(),
          omittedOf: new Map(),
        };
        const index = portion.indexOf.get(event.messageId) as number;
        const omitted = portion.omittedOf.get(event.messageId);
        for (const output of result.events) {
          out.events.push(output);
          if (!out.indexOf.has(output.messageId)) out.indexOf.set(output.messageId, index);
          if (omitted) out.omittedOf.set(output.messageId, omitted);
        }
        next.set(portion, out);
      });
      for (const [portion, byReason] of refused)
        for (const [reason, events] of byReason)
          failed.push({
            message: portion.message,
            value: Buffer.from(JSON.stringify(envelopeWith(portion.envelope, placesOf(portion, events)))),
            target,
            reason,
            retryable: false,
          });
      if (dropped.length > 0)
        recordOutcome(this.outcomes, writeKeyId, dropped, {
          destination: this.kind,
          integrationId: target,
          outcome: 'skipped',
          reason: `function_dropped: ${functionLabel(bound)} returned null`,
        });
      transformed.push(...next.values());
    }
    return transformed;
  }

  /** The debugger's `delivered` and `skipped` outcomes of one target's send. */
  private recordSent(
    target: string,
    outbound: readonly OutboundEvent[],
    portionOf: Map<string, Portion>,
    failed: ReadonlySet<string>,
    skipped: readonly { messageId: string; reason: string }[],
  ): void {
    const skippedIds = new Set(skipped.map((s) => s.messageId));
    const writeKeyOf = (messageId: string) => portionOf.get(messageId)?.envelope.writeKeyId;
    const delivered: SentEvent[] = [];
    for (const { event } of outbound) {
      const { messageId } = event;
      const portion = portionOf.get(messageId);
      if (!portion || failed.has(messageId) || skippedIds.has(messageId)) continue;
      delivered.push({
        writeKeyId: portion.envelope.writeKeyId,
        messageId,
        omitted: portion.omittedOf.get(messageId),
      });
    }
    const entry = { destination: this.kind, integrationId: target, reason: null };
    recordSentOutcomes(this.outcomes, delivered, { ...entry, outcome: 'delivered' });
    for (const { messageId, reason } of skipped) {
      const writeKeyId = writeKeyOf(messageId);
      if (writeKeyId)
        recordOutcome(this.outcomes, writeKeyId, [messageId], { ...entry, outcome: 'skipped', reason });
    }
  }

  /** One failure per record and verdict, holding that record's undelivered events. */
  private failures(
    target: string,
    error: unknown,
    outbound: readonly OutboundEvent[],
    portionOf: Map<string, Portion>,
  ): FailedDelivery[] {
    const verdicts =
      error instanceof BrokenCircuitError
        ? outbound.map((item) => ({
            item,
            reason:
              'circuit_open: the integration failed repeatedly; the vendor is not called until a probe succeeds',
            retryable: true,
          }))
        : error instanceof DeliveryFailure
          ? error.undelivered.length > 0
            ? error.undelivered.map((u) => ({ item: u.event, reason: u.reason, retryable: u.retryable }))
            : outbound
                .slice(error.sent)
                .map((item) => ({ item, reason: error.reason, retryable: error.retryable }))
          : // Not a vendor's answer (a bug, an unexpected throw): worth another attempt, then the dead letters.
            outbound.map((item) => ({
              item,
              reason: `unexpected: ${(error as Error).message}`,
              retryable: true,
            }));
    const retryAfterMs =
      error instanceof DeliveryFailure
        ? error.retryAfterMs
        : error instanceof BrokenCircuitError
          ? this.limits.breakerCooldownMs
          : undefined;
    const groups = new Map<
      string,
      { portion: Portion; reason: string; retryable: boolean; indexes: number[] }
    >();
    for (const { item, reason, retryable } of verdicts) {
      const portion = portionOf.get(item.event.messageId);
      const index = portion?.indexOf.get(item.event.messageId);
      if (!portion || index === undefined) continue;
      const key = `${portion.message.partition}/${portion.message.offset}/${String(retryable)}/${reason}`;
      const group = groups.get(key) ?? { portion, reason, retryable, indexes: [] };
      group.indexes.push(index);
      groups.set(key, group);
    }
    // The record's own events, as received: a retry or a replay decides the plan's actions again.
    return [...groups.values()].map(({ portion, reason, retryable, indexes }) => ({
      message: portion.message,
      value: Buffer.from(
        JSON.stringify(
          envelopeWith(
            portion.envelope,
            [...new Set(indexes)].sort((a, b) => a - b),
          ),
        ),
      ),
      target,
      reason,
      retryable,
      ...(retryable && retryAfterMs !== undefined ? { retryAfterMs } : {}),
    }));
  }
}

/** The places in its record of a portion's events, in order, each once. */
const placesOf = (portion: Portion, events: readonly TrackingEvent[]): number[] =>
  [...new Set(events.map((event) => portion.indexOf.get(event.messageId) as number))].sort((a, b) => a - b);

/**
 * The events of a record one target gets under the record's tracking plan (plan-decisions.ts),
 * `placeOf` giving each event's place in the record:
 * without what `omit` strips, and without the ones its policy quarantines (their indexes, to
 * dead-letter). Without a plan, the events as they are.
 */
function underPlan(
  envelope: OutboxEnvelope,
  placeOf: ReadonlyMap<TrackingEvent, number>,
  events: readonly TrackingEvent[],
  integrationId: string,
): {
  sent: TrackingEvent[];
  indexOf: Map<string, number>;
  omittedOf: Map<string, string[]>;
  quarantined: number[];
} {
  const sent: TrackingEvent[] = [];
  const indexOf = new Map<string, number>();
  const omittedOf = new Map<string, string[]>();
  const quarantined: number[] = [];
  for (const event of events) {
    const index = placeOf.get(event) as number;
    const decision = planDecision(envelope, index, integrationId);
    if (decision?.action === 'quarantine') {
      quarantined.push(index);
      continue;
    }
    if (decision?.action === 'omit') {
      sent.push(omitPaths(event, decision.omitted));
      omittedOf.set(event.messageId, decision.omitted);
    } else sent.push(event);
    // The first of two events with one message id: a vendor tells them apart by nothing else.
    if (!indexOf.has(event.messageId)) indexOf.set(event.messageId, index);
  }
  return { sent, indexOf, omittedOf, quarantined };
}
