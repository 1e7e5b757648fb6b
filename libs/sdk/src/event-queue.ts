import type { TrackingEvent } from '@pipeline/events';
import type { Log } from './log';
import { safeGet, safeSet, storageKeys, type EnumerableStore } from './storage';

/** Events kept at most; past it the oldest go, so an endless outage cannot fill the site's storage. */
export const MAX_QUEUED_EVENTS = 500;
/** A queue whose tab has not shown life for this long is taken over by another tab or page load. */
export const QUEUE_STALE_MS = 2 * 60 * 1000;

interface Stored {
  events: TrackingEvent[];
  retryAt: number;
  attempts: number;
}

function parseStored(json: string | null): Stored | null {
  try {
    const value = (json ? JSON.parse(json) : null) as Partial<Stored> | null;
    if (!value || !Array.isArray(value.events)) return null;
    return {
      events: value.events.filter(
        (e): e is TrackingEvent => !!e && typeof e === 'object' && typeof e.messageId === 'string',
      ),
      retryAt: typeof value.retryAt === 'number' ? value.retryAt : 0,
      attempts: typeof value.attempts === 'number' ? value.attempts : 0,
    };
  } catch {
    return null;
  }
}

/**
 * The events waiting to be sent, kept in localStorage so they survive a reload or a crash.
 * Each page has its own entry (`pipeline.queue.<id>`) and a heartbeat beside it: pages of one
 * site share localStorage, and two tabs writing one entry would overwrite each other's events.
 * A page adopts the entries of pages that are gone: released on pagehide, or silent for
 * QUEUE_STALE_MS after a crash. The retry state travels with the events, so a server's
 * Retry-After holds across page loads too.
 */
export class EventQueue {
  events: TrackingEvent[] = [];
  /** Epoch ms before which nothing is sent (backoff), 0 when none. */
  retryAt = 0;
  /** Failed attempts of the batch at the front. */
  attempts = 0;
  private readonly key: string;
  private readonly aliveKey: string;
  private warnedFull = false;
  private warnedUnsaved = false;

  constructor(
    private readonly store: EnumerableStore,
    id: string,
    private readonly log: Log,
  ) {
    this.key = `${storageKeys.queuePrefix}${id}`;
    this.aliveKey = `${this.key}.alive`;
  }

  get length(): number {
    return this.events.length;
  }

  push(event: TrackingEvent): void {
    this.events.push(event);
    if (this.events.length > MAX_QUEUED_EVENTS) {
      this.events.splice(0, this.events.length - MAX_QUEUED_EVENTS);
      if (!this.warnedFull)
        this.log.warn(`more than ${MAX_QUEUED_EVENTS} events waiting; dropping the oldest`);
      this.warnedFull = true;
    }
    this.save();
  }

  /** Removes the events with these messageIds (sent, or refused for good). */
  remove(messageIds: ReadonlySet<string>): void {
    this.events = this.events.filter((e) => !messageIds.has(e.messageId));
    this.save();
  }

  setRetry(retryAt: number, attempts: number): void {
    this.retryAt = retryAt;
    this.attempts = attempts;
    this.save();
  }

  /**
   * Marks this page alive and adopts the queues of pages that are gone, oldest events first.
   * Returns how many events it adopted.
   */
  heartbeat(now: number): number {
    safeSet(this.store, this.aliveKey, String(now));
    const adopted: Stored[] = [];
    for (const key of this.otherQueueKeys()) {
      const alive = Number(safeGet(this.store, `${key}.alive`)) || 0;
      if (now - alive < QUEUE_STALE_MS) continue;
      const stored = parseStored(safeGet(this.store, key));
      safeSet(this.store, key, null);
      safeSet(this.store, `${key}.alive`, null);
      if (stored) adopted.push(stored);
    }
    if (!adopted.length) return 0;
    const known = new Set(this.events.map((e) => e.messageId));
    const older = adopted.flatMap((s) => s.events).filter((e) => !known.has(e.messageId));
    this.events = [...older, ...this.events].slice(-MAX_QUEUED_EVENTS);
    this.retryAt = Math.max(this.retryAt, ...adopted.map((s) => s.retryAt));
    this.attempts = Math.max(this.attempts, ...adopted.map((s) => s.attempts));
    this.save();
    return older.length;
  }

  /** The page is going away (pagehide): the next page load may adopt what is left at once. */
  release(): void {
    this.save();
    safeSet(this.store, this.aliveKey, '0');
  }

  /**
   * The page came back from the back/forward cache: another page may have adopted the queue
   * meanwhile, and then it is that page's to send. Storage decides.
   */
  reclaim(now: number): void {
    const stored = parseStored(safeGet(this.store, this.key));
    this.events = stored?.events ?? [];
    this.retryAt = stored?.retryAt ?? 0;
    this.attempts = stored?.attempts ?? 0;
    this.heartbeat(now);
  }

  private otherQueueKeys(): string[] {
    const keys: string[] = [];
    try {
      for (let i = 0; i < this.store.length; i += 1) {
        const key = this.store.key(i);
        if (key?.startsWith(storageKeys.queuePrefix) && !key.endsWith('.alive') && key !== this.key) {
          keys.push(key);
        }
      }
    } catch {
      // An unreadable store has nothing to adopt.
    }
    return keys;
  }

  private save(): void {
    const stored: Stored = { events: this.events, retryAt: this.retryAt, attempts: this.attempts };
    const saved = this.events.length
      ? safeSet(this.store, this.key, JSON.stringify(stored))
      : safeSet(this.store, this.key, null);
    if (!saved && !this.warnedUnsaved) {
      this.log.warn('the event queue could not be saved (storage full?); it lives in memory only');
    }
    this.warnedUnsaved ||= !saved;
  }
}
