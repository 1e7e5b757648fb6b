import { isCluster, type RedisClient } from './redis-client';
import type { Logger } from '@pipeline/logger';

/**
 * The live event debugger's Redis layout (docs/tracking-api.md, "Debugger"), shared by the
 * writers (ingestion: what arrived; the delivery consumers: where it went) and the reader (the
 * control plane's `/write-keys/{id}/events`). Keys carry no service prefix: three services
 * share them.
 */
export const debuggerKeys = {
  /** A capped stream of the requests' events as received, one entry per event (field `d`: JSON). */
  events: (writeKeyId: string) => `pipeline:debug:v1:events:${writeKeyId}`,
  /** A capped stream of delivery outcomes, one entry per outcome (fields `m`: messageId, `d`: JSON). */
  outcomes: (writeKeyId: string) => `pipeline:debug:v1:outcomes:${writeKeyId}`,
};

/** A recorded event's payload is cut above this many bytes of JSON. */
export const DEBUG_PAYLOAD_MAX_BYTES = 16 * 1024;

export interface DebugEventError {
  path: string;
  message: string;
  code?: string;
}

/** A tracking-plan violation of a recorded event (docs/tracking-plans.md, "Violations"). */
export interface DebugViolation {
  code: string;
  /** JSON Pointer into the event. */
  path: string;
  keyword: string;
  message: string;
  ruleVersion?: number;
}

/** One event as ingestion received it (the control plane adds the stream entry id). */
export interface DebugEventRecord {
  receivedAt: string;
  requestId: string;
  status: 'accepted' | 'rejected';
  type: string | null;
  event: string | null;
  messageId: string | null;
  errors: DebugEventError[];
  payload: Record<string, unknown>;
  truncated?: true;
  /**
   * When its write key binds a tracking plan and the event was committed: the plan, and the
   * version it was held to (null: the plan could not be read, `plan_unavailable`).
   */
  plan?: { planId: string; version: number | null };
  /** With `plan`: the event's violations (at most 100), empty when it keeps to the plan. */
  violations?: DebugViolation[];
  /** With `plan`: what the binding's policy does with the event (docs/tracking-plans.md, "Debugger"). */
  planAction?: DebugPlanAction;
}

/** What one destination does with an event under a tracking plan's policy. */
export interface DebugPlanDecision {
  /** `allow`: as it came; `omit`: without the values at `omitted`; `quarantine`: kept out. */
  action: 'allow' | 'omit' | 'quarantine';
  /** JSON Pointers of the values stripped, with `omit`; empty otherwise. */
  omitted: string[];
}

/**
 * A recorded event's action under its binding's policy: what the warehouse and every destination
 * without an override do, and, by destination (an integration id, or `warehouse`), what each one
 * the policy names an override for does.
 */
export interface DebugPlanAction extends DebugPlanDecision {
  destinations?: Record<string, DebugPlanDecision>;
}

export type DeliveryOutcome =
  'stored' | 'delivered' | 'consent_skipped' | 'skipped' | 'retried' | 'dead_lettered' | 'quarantined';

export interface DeliveryOutcomeRecord {
  destination: string;
  integrationId: string | null;
  outcome: DeliveryOutcome;
  reason: string | null;
  /** A stored or delivered event's values its tracking plan's policy stripped (JSON Pointers); absent when none. */
  omitted?: string[];
  at: string;
}

/**
 * A payload as recorded: the value itself when its JSON fits in `maxBytes`;
 * otherwise its top-level scalar fields (type, event, messageId, ids, timestamps) with
 * `truncated: true`, its size and the start of its JSON text.
 */
export function debugPayload(
  value: unknown,
  maxBytes: number = DEBUG_PAYLOAD_MAX_BYTES,
): { payload: Record<string, unknown>; truncated: boolean } {
  let json: string | undefined;
  try {
    json = JSON.stringify(value);
  } catch {
    json = undefined;
  }
  const isObject = value !== null && typeof value === 'object' && !Array.isArray(value);
  if (json !== undefined && json.length <= maxBytes && isObject) {
    // Characters, not bytes: only multi-byte text can exceed the limit here; measured then.
    if (json.length * 3 <= maxBytes || Buffer.byteLength(json) <= maxBytes)
      return { payload: value as Record<string, unknown>, truncated: false };
  }
  if (json !== undefined && !isObject && json.length <= maxBytes)
    return { payload: { value }, truncated: false };
  const scalars: Record<string, unknown> = {};
  if (isObject) {
    for (const [key, field] of Object.entries(value as Record<string, unknown>)) {
      if (typeof field === 'string' && field.length <= 256) scalars[key] = field;
      else if (typeof field === 'number' || typeof field === 'boolean') scalars[key] = field;
    }
  }
  const text = json ?? String(value);
  return {
    payload: {
      ...scalars,
      truncated: true,
      bytes: Buffer.byteLength(text),
      preview: text.slice(0, 1024),
    },
    truncated: true,
  };
}

export interface DebugStreamOptions {
  /** Entries kept per stream (XADD MAXLEN ~). */
  maxLen: number;
  /** The stream's TTL, refreshed at most once a minute per stream. */
  ttlSeconds: number;
  /** Entries admitted per stream per second; above it the rest of the second is dropped and counted. */
  maxPerSecond: number;
}

export interface DebugStreamStats {
  /** Entries handed to Redis and acknowledged. */
  recorded: number;
  /** Entries not admitted: over the per-stream rate. */
  sampledOut: number;
  /** Entries lost: RedisClient not ready, or the write failed. */
  failed: number;
}

const EXPIRE_EVERY_MS = 60_000;

interface QueuedEntry {
  key: string;
  fields: string[];
}

/** The entries per stream, each stream's in the order queued. */
function byKey(entries: readonly QueuedEntry[]): QueuedEntry[][] {
  const groups = new Map<string, QueuedEntry[]>();
  for (const entry of entries) {
    const group = groups.get(entry.key);
    if (group) group.push(entry);
    else groups.set(entry.key, [entry]);
  }
  return [...groups.values()];
}
const MAX_TRACKED_STREAMS = 10_000;

/**
 * Appends to the debugger's capped streams off the hot path: `add` only queues; the queue
 * leaves in one pipeline on the next turn of the event loop, never awaited by the caller.
 * Without a ready Redis (unset, down, reconnecting) entries are dropped and counted: the
 * client fails fast (no offline queue), so nothing piles up in memory.
 */
export class DebugStreamWriter {
  readonly stats: DebugStreamStats = { recorded: 0, sampledOut: 0, failed: 0 };
  private queue: QueuedEntry[] = [];
  private scheduled = false;
  private readonly expiredAt = new Map<string, number>();
  private readonly windows = new Map<string, { second: number; count: number }>();

  constructor(
    private readonly redis: RedisClient | null,
    private readonly options: DebugStreamOptions,
    private readonly logger: Logger,
    private readonly now: () => number = Date.now,
  ) {}

  /** How many of `wanted` entries the stream may take now (the rest are counted as sampled out). */
  admit(key: string, wanted: number): number {
    const second = Math.floor(this.now() / 1000);
    let window = this.windows.get(key);
    if (!window || window.second !== second) {
      if (!window && this.windows.size >= MAX_TRACKED_STREAMS) this.windows.clear();
      window = { second, count: 0 };
      this.windows.set(key, window);
    }
    const admitted = Math.max(0, Math.min(wanted, this.options.maxPerSecond - window.count));
    window.count += admitted;
    this.stats.sampledOut += wanted - admitted;
    return admitted;
  }

  /** True when entries would reach Redis now: callers skip building them otherwise. */
  get available(): boolean {
    return this.redis !== null && this.redis.status === 'ready';
  }

  add(key: string, fields: string[]): void {
    if (!this.available) {
      this.stats.failed += 1;
      return;
    }
    this.queue.push({ key, fields });
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.flush());
    }
  }

  private flush(): void {
    this.scheduled = false;
    const entries = this.queue;
    this.queue = [];
    const redis = this.redis;
    if (entries.length === 0 || !redis) return;
    if (redis.status !== 'ready') {
      this.stats.failed += entries.length;
      return;
    }
    const now = this.now();
    // A cluster pipeline must stay within one node's slots, and streams of different write keys
    // hash anywhere: there each stream's commands are a pipeline of their own. One server takes
    // the whole queue in one.
    if (isCluster(redis)) for (const group of byKey(entries)) this.send(redis, group, now);
    else this.send(redis, entries, now);
  }

  private send(redis: RedisClient, entries: QueuedEntry[], now: number): void {
    const pipeline = redis.pipeline();
    for (const { key, fields } of entries) {
      pipeline.xadd(key, 'MAXLEN', '~', String(this.options.maxLen), '*', ...fields);
      const last = this.expiredAt.get(key);
      if (last === undefined || now - last >= EXPIRE_EVERY_MS) {
        if (last === undefined && this.expiredAt.size >= MAX_TRACKED_STREAMS) this.expiredAt.clear();
        this.expiredAt.set(key, now);
        pipeline.expire(key, this.options.ttlSeconds);
      }
    }
    pipeline.exec().then(
      (results) => {
        let failed = 0;
        for (const [error] of results ?? []) if (error) failed += 1;
        // Replies of EXPIRE are in results too; count entries, not commands.
        this.stats.failed += Math.min(failed, entries.length);
        this.stats.recorded += entries.length - Math.min(failed, entries.length);
        if (failed > 0) this.logger.debug('debugger write failed', { commands: failed });
      },
      (error: Error) => {
        this.stats.failed += entries.length;
        this.logger.debug('debugger write failed', { error: error.message });
      },
    );
  }
}
