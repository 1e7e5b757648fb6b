import {
  consentAllows,
  parseOutboxEnvelope,
  receiptContextOf,
  type OutboxEnvelope,
  type TrackingEvent,
} from '@pipeline/events';
import type { Logger } from '@pipeline/logger';
import type { ResolvedDestination } from '@pipeline/tenancy';
import {
  notAnEnvelope,
  retryTargetOf,
  type DeliveryMessage,
  type DeliveryReport,
  type Destination,
  type FailedDelivery,
} from '../destination';
import type { TenantDirectory } from '../tenant-directory';
import { DeliveryFailure, type Forwarder, type OutboundEvent } from './forwarder';

/** The events of one record bound for one target. */
interface Portion {
  message: DeliveryMessage;
  envelope: OutboxEnvelope;
  events: TrackingEvent[];
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

  constructor(
    private readonly forwarder: Forwarder,
    private readonly tenants: TenantDirectory,
    private readonly logger: Logger,
  ) {
    this.kind = forwarder.appType;
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
      // Throws while the control plane cannot be asked: the batch is read again later.
      const tenant = await this.tenants.forWriteKey(envelope.writeKeyId);
      const only = retryTargetOf(message);
      const destinations = (tenant?.destinations ?? []).filter(
        (d) => d.appType === this.kind && (only === undefined || d.integrationId === only),
      );
      if (destinations.length === 0 && only !== undefined) {
        this.logger.info('retry dropped: the integration no longer delivers here', { target: only });
      }
      for (const destination of destinations) {
        const events = envelope.events.filter((event) =>
          consentAllows(destination.kind, event.context?.consent),
        );
        consentSkipped += envelope.events.length - events.length;
        if (events.length === 0) continue;
        const target = targets.get(destination.integrationId) ?? { destination, portions: [] };
        target.portions.push({ message, envelope, events });
        targets.set(destination.integrationId, target);
      }
    }

    let delivered = 0;
    for (const [target, { destination, portions }] of targets) {
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
      try {
        delivered += (await this.forwarder.send(destination, outbound)).sent;
      } catch (error) {
        delivered += error instanceof DeliveryFailure ? error.sent : 0;
        failed.push(...this.failures(target, error, outbound, portionOf));
      }
    }
    return { delivered, consentSkipped, failed };
  }

  /** One failure per record and verdict, holding that record's undelivered events. */
  private failures(
    target: string,
    error: unknown,
    outbound: readonly OutboundEvent[],
    portionOf: Map<string, Portion>,
  ): FailedDelivery[] {
    const verdicts =
      error instanceof DeliveryFailure
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
    const retryAfterMs = error instanceof DeliveryFailure ? error.retryAfterMs : undefined;
    const groups = new Map<
      string,
      { portion: Portion; reason: string; retryable: boolean; events: TrackingEvent[] }
    >();
    for (const { item, reason, retryable } of verdicts) {
      const portion = portionOf.get(item.event.messageId);
      if (!portion) continue;
      const key = `${portion.message.partition}/${portion.message.offset}/${String(retryable)}/${reason}`;
      const group = groups.get(key) ?? { portion, reason, retryable, events: [] };
      group.events.push(item.event);
      groups.set(key, group);
    }
    return [...groups.values()].map(({ portion, reason, retryable, events }) => ({
      message: portion.message,
      value: Buffer.from(JSON.stringify({ ...portion.envelope, events } satisfies OutboxEnvelope)),
      target,
      reason,
      retryable,
      ...(retryable && retryAfterMs !== undefined ? { retryAfterMs } : {}),
    }));
  }
}
