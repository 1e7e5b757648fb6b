import type { TrackingEvent } from '@pipeline/events';
import { stampConsent, type Consent } from './consent';
import type { EventQueue } from './event-queue';
import { limits } from './library';
import type { Log } from './log';
import { outcomeOf, retryDelayMs, type Answer } from './retry-policy';

/** Well under the host's 2 MB body limit, whatever the characters' UTF-8 width. */
export const MAX_BATCH_BYTES = 500 * 1024;
/** Browsers cap the bodies of sendBeacon and keepalive requests in flight at 64 KiB in all. */
export const KEEPALIVE_BYTES = 60 * 1024;

export interface Transport {
  /** POSTs a JSON body with the key in X-Write-Key; null when the host could not be reached. */
  post(url: string, body: string, writeKey: string, keepalive: boolean): Promise<Answer | null>;
  /** Hands a body to the browser to deliver after the page is gone; false when it refused. */
  beacon(url: string, body: string): boolean;
}

export interface Clock {
  now(): number;
  /** In [0, 1): the jitter of retries. */
  random(): number;
  /** Runs `run` after `ms`; returns the cancel function. */
  later(run: () => void, ms: number): () => void;
}

export interface DeliverySettings {
  /** `<host>/collect`, or null when no host is configured. */
  url: string | null;
  writeKey: string | null;
  batchSize: number;
  flushIntervalMs: number;
}

export interface DeliveryState {
  queued: number;
  inFlight: number;
  attempts: number;
  retryAt: string | null;
}

const encoder = new TextEncoder();
const bytesOf = (text: string) => encoder.encode(text).length;

/** The events from the front of `events` that fit one request: at most `maxCount` and `maxBytes` (at least one). */
export function takeBatch(
  events: readonly TrackingEvent[],
  maxCount: number,
  maxBytes: number,
): TrackingEvent[] {
  const batch: TrackingEvent[] = [];
  // The envelope around the events: writeKey, sentAt, brackets, commas and the consent stamp.
  let bytes = 512;
  for (const event of events) {
    bytes += bytesOf(JSON.stringify(event)) + 1;
    if (batch.length >= maxCount || (batch.length > 0 && bytes > maxBytes)) break;
    batch.push(event);
  }
  return batch;
}

/**
 * Sends the queue to POST /collect: a batch when `batchSize` events wait or `flushIntervalMs`
 * after the first one, one request at a time so the order holds, `sentAt` and the consent
 * stamped at send time. Failures that may pass (network, 408, 429, 5xx) are retried with
 * backoff, never sooner than the host's Retry-After; other 4xx drop the batch. When the page is
 * hidden or left, what is left goes with sendBeacon.
 */
export class Delivery {
  private cancelTimer: (() => void) | null = null;
  private timerDue = 0;
  private draining: Promise<void> | null = null;
  private inFlight: ReadonlySet<string> = new Set();

  constructor(
    private readonly queue: EventQueue,
    private readonly settings: DeliverySettings,
    private readonly transport: Transport,
    private readonly clock: Clock,
    private readonly consent: () => Consent | null,
    private readonly log: Log,
  ) {}

  enqueue(event: TrackingEvent): void {
    this.queue.push(event);
    this.schedule(this.queue.length >= this.settings.batchSize ? 0 : this.settings.flushIntervalMs);
  }

  /** Sends everything queued now (unless the host asked to wait); resolves when those attempts end. */
  flush(): Promise<void> {
    this.draining ??= this.sendAll().finally(() => {
      this.draining = null;
    });
    return this.draining;
  }

  /** Starts sending what is already queued (adopted from an earlier page). */
  resume(): void {
    if (this.queue.length) this.schedule(0);
  }

  /**
   * The page is hidden or being left: hands the queue to the browser with sendBeacon, in
   * requests under its 64 KiB cap. Events of a request still in flight are left to it. While
   * the host has asked to wait, nothing goes: the events stay stored for this page's timer or
   * the next page load.
   */
  hide(): void {
    const { url, writeKey } = this.settings;
    if (!url || !writeKey || this.queue.retryAt > this.clock.now()) return;
    let rest = this.queue.events.filter((e) => !this.inFlight.has(e.messageId));
    const handedOver = new Set<string>();
    while (rest.length) {
      const batch = takeBatch(rest, limits.maxBatchSize, KEEPALIVE_BYTES);
      const body = this.body(batch, writeKey);
      if (bytesOf(body) > KEEPALIVE_BYTES || !this.transport.beacon(url, body)) break;
      for (const event of batch) handedOver.add(event.messageId);
      rest = rest.slice(batch.length);
    }
    if (handedOver.size) this.queue.remove(handedOver);
  }

  state(): DeliveryState {
    return {
      queued: this.queue.length,
      inFlight: this.inFlight.size,
      attempts: this.queue.attempts,
      retryAt: this.queue.retryAt ? new Date(this.queue.retryAt).toISOString() : null,
    };
  }

  /** Arms the timer for `ms` from now (never before a retry is due), unless it fires sooner already. */
  private schedule(ms: number): void {
    const due = Math.max(this.clock.now() + ms, this.queue.retryAt);
    if (this.cancelTimer && this.timerDue <= due) return;
    this.cancelTimer?.();
    this.timerDue = due;
    this.cancelTimer = this.clock.later(() => {
      this.cancelTimer = null;
      void this.flush();
    }, due - this.clock.now());
  }

  private body(batch: readonly TrackingEvent[], writeKey: string): string {
    return JSON.stringify({
      writeKey,
      sentAt: new Date(this.clock.now()).toISOString(),
      batch: stampConsent(batch, this.consent()),
    });
  }

  private async sendAll(): Promise<void> {
    const { url, writeKey } = this.settings;
    if (!url || !writeKey) return;
    for (;;) {
      if (this.queue.retryAt > this.clock.now()) {
        this.schedule(0);
        return;
      }
      const batch = takeBatch(this.queue.events, this.settings.batchSize, MAX_BATCH_BYTES);
      if (!batch.length) return;
      const ids = new Set(batch.map((e) => e.messageId));
      const body = this.body(batch, writeKey);
      this.inFlight = ids;
      // keepalive lets a request finish after the page is gone; the browser allows it for small bodies only.
      const answer = await this.transport.post(url, body, writeKey, bytesOf(body) <= KEEPALIVE_BYTES);
      this.inFlight = new Set();
      const outcome = outcomeOf(answer, this.clock.now());
      if (outcome.kind === 'retry') {
        const attempts = this.queue.attempts + 1;
        const delay = retryDelayMs(attempts, outcome.afterMs, this.clock.random());
        this.queue.setRetry(this.clock.now() + delay, attempts);
        this.schedule(delay);
        return;
      }
      if (outcome.kind === 'drop') {
        this.log.error(
          `the tracking host refused ${batch.length} events (${outcome.reason}); they are dropped`,
          answer?.body,
        );
      } else {
        // A partial success: the host took the valid events and names the others by index.
        const { invalid, errors } = (answer?.body ?? {}) as { invalid?: unknown; errors?: unknown };
        if (typeof invalid === 'number' && invalid > 0) {
          this.log.error(`the tracking host refused ${invalid} of ${batch.length} events as invalid`, errors);
        }
      }
      if (this.queue.attempts) this.queue.setRetry(0, 0);
      this.queue.remove(ids);
    }
  }
}
