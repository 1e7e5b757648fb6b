import { createHash } from 'node:crypto';
import type { Message } from 'kafkajs';
import {
  outboxKey,
  toOutboxEnvelopes,
  validateEvent,
  type OutboxEnvelope,
  type TrackingEvent,
} from '@pipeline/events';
import type { Logger } from '@pipeline/logger';
import { originAllowed, type WriteKeyRecord } from '@pipeline/tenancy';
import type { WriteKeyAuthenticator } from '../auth/write-key-authenticator';
import type {
  AuthAttemptLimiter,
  LimitDecision,
  LocalBackstop,
  SharedRateLimiter,
} from '../limits/rate-limits';
import type { BatchDedupe } from '../outbox/batch-dedupe';
import type { OutboxPublisher } from '../outbox/outbox-publisher';
import { findWriteKey, type CollectRequest } from './collect-request';
import { ingestionErrors, type EventErrors } from './ingestion-errors';

export interface RequestFacts {
  headers: Record<string, string | string[] | undefined>;
  ip: string | null;
  userAgent: string | null;
  origin: string | undefined;
  receivedAt: Date;
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
  };
  /** Static mode. */
  staticDelivery?: StaticDelivery;
}

export interface CollectResponse {
  status: number;
  body: Record<string, unknown>;
}

function reject(decision: LimitDecision): void {
  if (!decision.allowed) throw ingestionErrors.rateLimited(decision.limitType, decision.retryAfter);
}

export class CollectService {
  constructor(private readonly deps: CollectDependencies) {}

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
      reject(await hosted.authAttempts.take(facts.ip ?? 'unknown'));
    }
    const tenant = await authenticator.authenticate(writeKey);
    if (!originAllowed(facts.origin, tenant.allowedOrigins)) throw ingestionErrors.originNotAllowed();
    return tenant;
  }

  /** Authenticates and validates a request: everything /collect and /admin/simulate share. */
  async validate(
    request: CollectRequest,
    facts: RequestFacts,
    options: { countAuthAttempts: boolean },
  ): Promise<ValidatedBatch> {
    const writeKey = findWriteKey(facts.headers, request.bodyWriteKey);
    if (!writeKey) throw ingestionErrors.missingWriteKey();
    const tenant = await this.authenticate(writeKey, facts, options);

    const events: TrackingEvent[] = [];
    const errors: EventErrors[] = [];
    request.events.forEach((input, index) => {
      const result = validateEvent(input, request.bodyBytes, request.dialect);
      if (result.valid) events.push(result.event);
      else errors.push({ index, errors: result.errors });
    });
    if (events.length === 0) throw ingestionErrors.noValidEvents(errors);

    const batchId = createHash('sha256')
      .update(`${tenant.accountId}\n${events.map((e) => e.messageId).join('\n')}`)
      .digest('hex')
      .slice(0, 32);
    const receipt: Omit<OutboxEnvelope, 'events'> = {
      v: 2,
      accountId: tenant.accountId,
      writeKeyId: tenant.writeKeyId,
      batchId,
      receivedAt: facts.receivedAt.toISOString(),
      ip: facts.ip,
      userAgent: facts.userAgent,
      ...(request.batchSentAt ? { batchSentAt: request.batchSentAt } : {}),
    };
    return {
      tenant,
      events,
      received: request.events.length,
      errors,
      receipt,
      batchId,
      bodyBytes: request.bodyBytes,
    };
  }

  async collect(request: CollectRequest, facts: RequestFacts): Promise<CollectResponse> {
    const batch = await this.validate(request, facts, { countAuthAttempts: true });
    const summary = {
      ok: true,
      received: batch.received,
      invalid: batch.errors.length,
      errors: batch.errors,
    };
    const { hosted, staticDelivery } = this.deps;
    if (staticDelivery) {
      // Static mode: no rate limits; delivered before the answer.
      return { status: 200, body: { ...summary, inserted: await staticDelivery.deliver(batch) } };
    }
    if (!hosted) throw new Error('CollectService needs a hosted or a static configuration');

    const { tenant } = batch;
    reject(hosted.backstop.take(tenant.writeKeyId, batch.events.length));
    reject(await hosted.shared.take(tenant.writeKeyId, batch.events.length, tenant.rateLimits));
    const deliveryCount = tenant.destinations.length + (tenant.warehouse ? 1 : 0);
    if (deliveryCount === 0) throw ingestionErrors.durableIngressUnavailable('no_enabled_destination', 60);

    const accepted = { ...summary, accepted: true, batchId: batch.batchId, deliveryCount };
    if (await hosted.dedupe.seen(batch.batchId))
      return { status: 202, body: { ...accepted, deduplicated: true } };
    const messages: Message[] = toOutboxEnvelopes(batch.receipt, batch.events, batch.bodyBytes).map(
      ({ envelope, json }) => ({
        key: outboxKey(envelope),
        value: json,
        headers: {
          'account-id': envelope.accountId,
          'batch-id': envelope.batchId,
          'event-count': String(envelope.events.length),
        },
      }),
    );
    try {
      await hosted.publisher.publish(messages);
    } catch (error) {
      this.deps.logger.error('outbox publish failed', {
        error: (error as Error).message,
        batchId: batch.batchId,
      });
      throw ingestionErrors.durableIngressUnavailable('outbox_unavailable', 5);
    }
    await hosted.dedupe.remember(batch.batchId);
    return { status: 202, body: { ...accepted, deduplicated: false } };
  }
}
