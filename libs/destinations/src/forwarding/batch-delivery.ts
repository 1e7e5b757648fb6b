import { DeliveryFailure, type SkippedEvent, type UndeliveredEvent } from './delivery-failure';
import { InvalidConfig } from './destination-settings';
import type { SendOutcome } from './forwarder';
import type { OutboundEvent } from './outbound-event';
import { packRequests, type RequestLimits } from './request-batching';
import {
  abortReason,
  callVendor,
  isRequestFailure,
  type RequestFailure,
  type VendorHttp,
  type VendorRequest,
  type VendorResponse,
} from './vendor-request';

/** An item of a request the vendor did not take. `index` is its position in the request. */
export interface ItemRejection {
  index: number;
  reason: string;
  retryable: boolean;
}

/** How a vendor client reads an answer. */
export type Verdict =
  /** Ingested, except the listed items. */
  | { kind: 'accepted'; rejected?: readonly ItemRejection[] }
  /** Nothing ingested because of the listed items; the others can be sent again at once (Amplitude 400). */
  | { kind: 'resend_without'; rejected: readonly ItemRejection[] }
  /** 413: the same items in smaller requests will pass. */
  | { kind: 'too_large' }
  /**
   * Nothing ingested because of some item the vendor does not name (Meta's and HubSpot's 400
   * on an invalid item): halve the request to find it; alone, the item fails with `failure`.
   */
  | { kind: 'isolate'; failure: RequestFailure }
  | { kind: 'failed'; failure: RequestFailure };

/** Requests one send may make by halving after 413s before it parks the rest for a retry. */
export const defaultMaxSplitRequests = 16;

/** One endpoint of a vendor: how items become a request and how its answer is read. */
export interface Endpoint<Item> {
  limits: RequestLimits;
  /** Bytes of a body with no items. */
  envelopeBytes: number;
  request(items: readonly Item[]): VendorRequest;
  verdict(response: VendorResponse, items: readonly Item[]): Verdict;
}

/** One event with the vendor items it maps to. */
interface Unit<Item> {
  position: number;
  items: Item[];
  itemBytes: number[];
  itemCount: number;
  bytes: number;
}

type EventState =
  | { state: 'pending' }
  | { state: 'sent' }
  | { state: 'skipped'; reason: string }
  | { state: 'undelivered'; reason: string; retryable: boolean };

/**
 * Tracks what happened to each event of one send, so a failure reports exactly which events
 * went (never to be resent) and which did not, each with its own verdict.
 */
export class DeliveryLedger {
  private readonly states: EventState[];
  private requestCount = 0;
  /** Requests made by splitting after 413s, against http.maxSplitRequests. */
  private splitRequests = 0;
  private haltedBy: RequestFailure | undefined;
  /** Describes the failure when nothing halted the send but events were rejected. */
  private firstRejection: RequestFailure | undefined;

  constructor(
    readonly appType: string,
    readonly events: readonly OutboundEvent[],
    readonly http: VendorHttp,
  ) {
    this.states = events.map(() => ({ state: 'pending' }));
  }

  /** Counts a request made outside deliver (a token exchange, a lookup the send needs first). */
  noteRequest(): void {
    this.requestCount += 1;
  }

  skip(position: number, reason: string): void {
    this.states[position] = { state: 'skipped', reason };
  }

  /**
   * Maps each event to its items for one endpoint; an event that maps to a string is skipped
   * with that reason.
   */
  mapEvents<Item>(map: (outbound: OutboundEvent) => Item[] | string): Map<number, Item[]> {
    const mapped = new Map<number, Item[]>();
    this.events.forEach((outbound, position) => {
      const items = this.tryMap(position, () => map(outbound));
      if (items === undefined) return;
      if (typeof items === 'string') this.skip(position, items);
      else mapped.set(position, items);
    });
    return mapped;
  }

  /**
   * Maps one event; an exception (data no mapping foresaw) fails that event alone,
   * permanently, instead of the whole send.
   */
  tryMap<T>(position: number, map: () => T): T | undefined {
    try {
      return map();
    } catch (error) {
      if (error instanceof InvalidConfig) throw error;
      this.reject(position, `mapping_failed: ${(error as Error).message}`, false);
      return undefined;
    }
  }

  /** Stops the send: every event still pending ends undelivered with this failure. */
  halt(failure: RequestFailure): void {
    this.haltedBy ??= failure;
  }

  /**
   * Sends events to one endpoint, in requests within its limits. `mapped` holds, per event
   * position, the items it maps to; a position absent from it is not for this endpoint.
   */
  async deliver<Item>(endpoint: Endpoint<Item>, mapped: ReadonlyMap<number, Item[]>): Promise<void> {
    const units: Unit<Item>[] = [];
    for (const [position, items] of mapped) {
      const itemBytes = this.tryMap(position, () =>
        items.map((item) => Buffer.byteLength(JSON.stringify(item), 'utf8')),
      );
      if (!itemBytes) continue;
      // Each item is followed by a comma in the body's array, the last by nothing.
      const bytes = itemBytes.reduce((sum, size) => sum + size + 1, 0);
      units.push({ position, items, itemBytes, itemCount: items.length, bytes });
    }
    const { batches, oversized } = packRequests(
      units,
      endpoint.limits,
      endpoint.envelopeBytes,
      (unit) => unit.itemBytes,
    );
    for (const { unit, why } of oversized) this.reject(unit.position, `event_too_large: ${why}`, false);

    const queue = [...batches];
    for (let batch = queue.shift(); batch; batch = queue.shift()) {
      if (this.haltedBy) return;
      if (this.http.signal?.aborted) {
        this.halt({ reason: abortReason(this.http.signal), retryable: true });
        return;
      }
      const owners: Unit<Item>[] = [];
      const items: Item[] = [];
      for (const unit of batch) {
        for (const item of unit.items) {
          owners.push(unit);
          items.push(item);
        }
      }
      const answer = await callVendor(this.http, endpoint.request(items));
      this.requestCount += 1;
      const status = isRequestFailure(answer) ? undefined : answer.status;
      const verdict: Verdict = isRequestFailure(answer)
        ? { kind: 'failed', failure: answer }
        : endpoint.verdict(answer, items);

      switch (verdict.kind) {
        case 'accepted': {
          const rejected = this.rejectItems(verdict.rejected ?? [], owners, status);
          for (const unit of batch) if (!rejected.has(unit)) this.states[unit.position] = { state: 'sent' };
          break;
        }
        case 'resend_without': {
          const rejected = this.rejectItems(verdict.rejected, owners, status);
          if (rejected.size === 0) {
            // A vendor naming no item would have us resend the same request forever.
            for (const unit of batch) this.reject(unit.position, 'rejected_without_items', false);
            break;
          }
          const rest = batch.filter((unit) => !rejected.has(unit));
          if (rest.length > 0) queue.unshift(rest);
          break;
        }
        case 'too_large': {
          if (batch.length === 1) {
            const [only] = batch;
            if (only) this.reject(only.position, 'event_too_large: the vendor refused it alone (413)', false);
            break;
          }
          const cap = this.http.maxSplitRequests ?? defaultMaxSplitRequests;
          if (this.splitRequests + 2 > cap) {
            // A receiver answering 413 to everything would otherwise cost two requests per event.
            for (const unit of batch)
              this.reject(unit.position, `too_large: still 413 after ${cap} smaller requests`, true);
            break;
          }
          this.splitRequests += 2;
          const half = Math.ceil(batch.length / 2);
          queue.unshift(batch.slice(0, half), batch.slice(half));
          break;
        }
        case 'isolate': {
          const { failure } = verdict;
          if (batch.length === 1) {
            const [only] = batch;
            if (only) this.reject(only.position, failure.reason, false, failure);
            break;
          }
          const cap = this.http.maxSplitRequests ?? defaultMaxSplitRequests;
          if (this.splitRequests + 2 > cap) {
            // Good events may be among them: a later attempt, in other batches, may pass.
            for (const unit of batch)
              this.reject(
                unit.position,
                `${failure.reason}: not isolated within ${cap} smaller requests`,
                true,
                failure,
              );
            break;
          }
          this.splitRequests += 2;
          const half = Math.ceil(batch.length / 2);
          queue.unshift(batch.slice(0, half), batch.slice(half));
          break;
        }
        case 'failed': {
          const { failure } = verdict;
          if (failure.retryable || failure.fatal) {
            this.halt(failure);
            return;
          }
          for (const unit of batch) this.reject(unit.position, failure.reason, false, failure);
          break;
        }
      }
    }
  }

  /** The outcome; throws DeliveryFailure when any event was not delivered. */
  finish(): SendOutcome {
    const undelivered: UndeliveredEvent[] = [];
    const skipped: SkippedEvent[] = [];
    let sent = 0;
    this.states.forEach((state, position) => {
      const outbound = this.events[position];
      if (!outbound) return;
      if (state.state === 'sent') sent += 1;
      else if (state.state === 'skipped')
        skipped.push({ messageId: outbound.event.messageId, reason: state.reason });
      else if (state.state === 'undelivered') {
        undelivered.push({ event: outbound, reason: state.reason, retryable: state.retryable });
      } else {
        const failure = this.haltedBy ?? { reason: 'not_attempted', retryable: true };
        undelivered.push({ event: outbound, reason: failure.reason, retryable: failure.retryable });
      }
    });
    if (undelivered.length === 0) return { sent, requests: this.requestCount, skipped };

    const first = this.haltedBy ?? this.firstRejection ?? { reason: 'undelivered', retryable: false };
    throw new DeliveryFailure(
      `${this.appType}: ${first.reason}`,
      undelivered.some((u) => u.retryable),
      {
        ...(first.status !== undefined ? { status: first.status } : {}),
        ...(first.detail !== undefined ? { detail: first.detail } : {}),
        ...(first.retryAfterMs !== undefined ? { retryAfterMs: first.retryAfterMs } : {}),
        sent,
        requests: this.requestCount,
        undelivered,
        skipped,
      },
    );
  }

  private reject(position: number, reason: string, retryable: boolean, cause?: RequestFailure): void {
    this.states[position] = { state: 'undelivered', reason, retryable };
    this.firstRejection ??= cause ?? { reason, retryable };
  }

  private rejectItems<Item>(
    rejections: readonly ItemRejection[],
    owners: readonly Unit<Item>[],
    status: number | undefined,
  ): Set<Unit<Item>> {
    const rejected = new Set<Unit<Item>>();
    for (const { index, reason, retryable } of rejections) {
      const owner = owners[index];
      if (!owner || rejected.has(owner)) continue;
      rejected.add(owner);
      this.reject(owner.position, reason, retryable, { reason, retryable, ...(status ? { status } : {}) });
    }
    return rejected;
  }
}

/**
 * Runs one send: `run` maps the events and delivers them through the ledger. Invalid config or
 * missing credentials found on the way fail every event still pending, permanently.
 */
export async function deliverAll(
  appType: string,
  events: readonly OutboundEvent[],
  http: VendorHttp,
  run: (ledger: DeliveryLedger) => Promise<void>,
): Promise<SendOutcome> {
  const ledger = new DeliveryLedger(appType, events, http);
  try {
    await run(ledger);
  } catch (error) {
    if (!(error instanceof InvalidConfig)) throw error;
    ledger.halt({ reason: `invalid_config: ${error.message}`, retryable: false });
  }
  return ledger.finish();
}
