import { createHash } from 'node:crypto';
import type { Logger } from '@pipeline/logger';
import type { RedisClient } from './redis-client';

/**
 * Tracking-plan violation counts and samples (docs/tracking-plans.md, "Violations over time"):
 * ingestion adds what the door found in each committed request; the control plane reads them
 * back for the violations API and the alerts. Counted in Redis, the shared counter store, per
 * account in minute buckets (for alerts and the last hours) and hour buckets (for the last
 * month). Every key of an account carries the account as its `{hash tag}`: one script touches
 * them all, and one pipeline reads them, on a cluster too.
 */
export interface ViolationKey {
  planId: string;
  /** The plan version the event was held to; null when the plan could not be read. */
  version: number | null;
  writeKeyId: string;
  eventType: string;
  /** track: the event; page and screen: the name; others: null. */
  eventName: string | null;
  code: string;
  /** JSON Pointer into the event. */
  path: string;
}

export interface ViolationSample {
  messageId: string | null;
  receivedAt: string;
  message: string;
  payload: Record<string, unknown>;
}

export interface ViolationEntry {
  key: ViolationKey;
  count: number;
  /** Built only when the writer keeps a sample of the key (at most once a minute per key). */
  sample: () => ViolationSample;
}

export type ViolationGranularity = 'minute' | 'hour';

const MINUTE_MS = 60_000;
const HOUR_MS = 3_600_000;
export const bucketMs: Record<ViolationGranularity, number> = { minute: MINUTE_MS, hour: HOUR_MS };

/** Where the buckets and samples live. */
export const violationKeys = {
  bucket: (accountId: string, granularity: ViolationGranularity, start: number) =>
    `pipeline:violations:v1:{${accountId}}:${granularity === 'minute' ? 'm' : 'h'}:${start}`,
  /** A sorted set of the account's sample lists, scored by when each was last written. */
  sampleLists: (accountId: string) => `pipeline:violations:v1:{${accountId}}:samples`,
  samples: (accountId: string, field: string) =>
    `pipeline:violations:v1:{${accountId}}:s:${createHash('sha256').update(field).digest('base64url')}`,
};

/** A bucket's field for the counts past its cap on distinct keys. */
export const OVERFLOW_FIELD = 'overflow';

/** Names and paths longer than this are cut: a key must stay a bounded field. */
export const MAX_KEY_TEXT = 256;

const cut = (text: string) => (text.length > MAX_KEY_TEXT ? text.slice(0, MAX_KEY_TEXT) : text);

/** A key as a bucket's field: a JSON array, never equal to OVERFLOW_FIELD. */
export function violationField(key: ViolationKey): string {
  return JSON.stringify([
    cut(key.planId),
    key.version,
    cut(key.writeKeyId),
    cut(key.eventType),
    key.eventName === null ? null : cut(key.eventName),
    cut(key.code),
    cut(key.path),
  ]);
}

/** The key of a field; undefined for the overflow field or a field that is not one of ours. */
export function parseViolationField(field: string): ViolationKey | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(field);
  } catch {
    return undefined;
  }
  if (!Array.isArray(parsed) || parsed.length !== 7) return undefined;
  const [planId, version, writeKeyId, eventType, eventName, code, path] = parsed as unknown[];
  const text = (v: unknown): v is string => typeof v === 'string';
  if (!text(planId) || !text(writeKeyId) || !text(eventType) || !text(code) || !text(path)) return undefined;
  if (version !== null && !Number.isInteger(version)) return undefined;
  if (eventName !== null && !text(eventName)) return undefined;
  return { planId, version: version as number | null, writeKeyId, eventType, eventName, code, path };
}

export interface ViolationLedgerOptions {
  /** Distinct keys a bucket holds; the counts of further keys go to its `overflow` field. */
  maxKeysPerBucket: number;
  /** Sample lists an account keeps; a key past it gets no samples until one expires. */
  maxSampleLists: number;
  /** The newest samples a list keeps. */
  samplesPerKey: number;
  minuteTtlSeconds: number;
  hourTtlSeconds: number;
  sampleTtlSeconds: number;
}

export const defaultViolationLedgerOptions: ViolationLedgerOptions = {
  maxKeysPerBucket: 1_000,
  maxSampleLists: 500,
  samplesPerKey: 5,
  // Two days of minutes (alert windows and the last day at a fine grain), 32 days of hours.
  minuteTtlSeconds: 2 * 86_400,
  hourTtlSeconds: 32 * 86_400,
  sampleTtlSeconds: 7 * 86_400,
};

/**
 * One call per account and flush. A key already in a bucket, or a bucket under its cap, takes
 * the count; otherwise it goes to the overflow field, so a tenant sending endless distinct
 * property names grows no bucket past the cap. Sample lists likewise: the account's sorted set
 * forgets lists older than their TTL, and a new list is started only while it holds fewer than
 * the cap.
 * KEYS: minute bucket, hour bucket, the sample lists' set, then each sample's list.
 * ARGV: minute TTL, hour TTL, sample TTL, max keys per bucket, samples per key, max sample
 * lists, now (ms), the number of counted keys N, N (field, count) pairs, then
 * (KEYS index, sample JSON) pairs.
 */
const RECORD_SCRIPT = `
local minuteKey, hourKey, lists = KEYS[1], KEYS[2], KEYS[3]
local maxKeys = tonumber(ARGV[4])
local n = tonumber(ARGV[8])
for i = 1, n do
  local field = ARGV[7 + 2 * i]
  local count = tonumber(ARGV[8 + 2 * i])
  for _, key in ipairs({ minuteKey, hourKey }) do
    if redis.call('HEXISTS', key, field) == 1 or redis.call('HLEN', key) < maxKeys then
      redis.call('HINCRBY', key, field, count)
    else
      redis.call('HINCRBY', key, '${OVERFLOW_FIELD}', count)
    end
  end
end
redis.call('EXPIRE', minuteKey, ARGV[1])
redis.call('EXPIRE', hourKey, ARGV[2])
local base = 8 + 2 * n
local samples = (#ARGV - base) / 2
if samples > 0 then
  local now = tonumber(ARGV[7])
  local ttl = tonumber(ARGV[3])
  redis.call('ZREMRANGEBYSCORE', lists, '-inf', now - ttl * 1000)
  for j = 1, samples do
    local list = KEYS[tonumber(ARGV[base + 2 * j - 1])]
    if redis.call('ZSCORE', lists, list) or redis.call('ZCARD', lists) < tonumber(ARGV[6]) then
      redis.call('ZADD', lists, now, list)
      redis.call('LPUSH', list, ARGV[base + 2 * j])
      redis.call('LTRIM', list, 0, tonumber(ARGV[5]) - 1)
      redis.call('EXPIRE', list, ttl)
    end
  end
  redis.call('EXPIRE', lists, ttl)
end
return n
`;

export interface ViolationLedgerStats {
  /** Violations counted in Redis. */
  recorded: number;
  /** Violations not counted: Redis unset, not ready, or the write failed. */
  failed: number;
}

/** Processes keep at most this many keys' last sample minute; past it the map starts over. */
const MAX_SAMPLED_KEYS = 10_000;

interface Pending {
  counts: Map<string, number>;
  samples: Map<string, ViolationSample>;
}

/**
 * Adds violations to the account's counts off the hot path, like the debugger's writer:
 * `record` only queues; each account's queue leaves as one script call on the next turn of
 * the event loop, never awaited by the request. Without a ready Redis the violations are
 * counted as failed and dropped: counts are for seeing, the events themselves are already
 * committed with their verdicts.
 */
export class ViolationLedger {
  readonly stats: ViolationLedgerStats = { recorded: 0, failed: 0 };
  private readonly queue = new Map<string, Pending>();
  private scheduled = false;
  private readonly sampledAt = new Map<string, number>();
  private readonly options: ViolationLedgerOptions;

  constructor(
    private readonly redis: RedisClient | null,
    private readonly logger: Logger,
    options: Partial<ViolationLedgerOptions> = {},
    private readonly now: () => number = Date.now,
  ) {
    this.options = { ...defaultViolationLedgerOptions, ...options };
  }

  get available(): boolean {
    return this.redis !== null && this.redis.status === 'ready';
  }

  record(accountId: string, entries: readonly ViolationEntry[]): void {
    let total = 0;
    for (const entry of entries) total += entry.count;
    if (total === 0) return;
    if (!this.available) {
      this.stats.failed += total;
      return;
    }
    const minute = Math.floor(this.now() / MINUTE_MS);
    let pending = this.queue.get(accountId);
    if (!pending) {
      pending = { counts: new Map(), samples: new Map() };
      this.queue.set(accountId, pending);
    }
    for (const entry of entries) {
      if (entry.count <= 0) continue;
      const field = violationField(entry.key);
      pending.counts.set(field, (pending.counts.get(field) ?? 0) + entry.count);
      const sampledKey = `${accountId}\u0000${field}`;
      if (this.sampledAt.get(sampledKey) !== minute && !pending.samples.has(field)) {
        if (this.sampledAt.size >= MAX_SAMPLED_KEYS) this.sampledAt.clear();
        this.sampledAt.set(sampledKey, minute);
        pending.samples.set(field, entry.sample());
      }
    }
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(() => this.flush());
    }
  }

  private flush(): void {
    this.scheduled = false;
    const redis = this.redis;
    const now = this.now();
    for (const [accountId, pending] of this.queue) {
      this.queue.delete(accountId);
      let total = 0;
      for (const count of pending.counts.values()) total += count;
      if (!redis || redis.status !== 'ready') {
        this.stats.failed += total;
        continue;
      }
      const keys = [
        violationKeys.bucket(accountId, 'minute', Math.floor(now / MINUTE_MS) * MINUTE_MS),
        violationKeys.bucket(accountId, 'hour', Math.floor(now / HOUR_MS) * HOUR_MS),
        violationKeys.sampleLists(accountId),
      ];
      const o = this.options;
      const args: (string | number)[] = [
        o.minuteTtlSeconds,
        o.hourTtlSeconds,
        o.sampleTtlSeconds,
        o.maxKeysPerBucket,
        o.samplesPerKey,
        o.maxSampleLists,
        now,
        pending.counts.size,
      ];
      for (const [field, count] of pending.counts) args.push(field, count);
      for (const [field, sample] of pending.samples) {
        keys.push(violationKeys.samples(accountId, field));
        args.push(keys.length, JSON.stringify(sample));
      }
      redis.eval(RECORD_SCRIPT, keys.length, ...keys, ...args).then(
        () => {
          this.stats.recorded += total;
        },
        (error: Error) => {
          this.stats.failed += total;
          this.logger.debug('violation counts write failed', { error: error.message });
        },
      );
    }
  }
}

export interface ViolationBucket {
  /** The bucket's start. */
  start: number;
  counts: { key: ViolationKey; count: number }[];
  /** Counts past the bucket's cap on distinct keys. */
  overflow: number;
}

/** Buckets one read may span: a day of minutes, a month of hours. */
export const maxBuckets: Record<ViolationGranularity, number> = { minute: 1_440, hour: 768 };

/**
 * The account's buckets that start in [from, to), oldest first, empty ones included. Throws a
 * RangeError for a span of more than maxBuckets (callers check their input first).
 */
export async function readViolationBuckets(
  redis: RedisClient,
  accountId: string,
  granularity: ViolationGranularity,
  from: number,
  to: number,
): Promise<ViolationBucket[]> {
  const size = bucketMs[granularity];
  const first = Math.ceil(from / size) * size;
  const starts: number[] = [];
  for (let start = first; start < to; start += size) {
    starts.push(start);
    if (starts.length > maxBuckets[granularity])
      throw new RangeError(`more than ${maxBuckets[granularity]} ${granularity} buckets`);
  }
  if (starts.length === 0) return [];
  const pipeline = redis.pipeline();
  for (const start of starts) pipeline.hgetall(violationKeys.bucket(accountId, granularity, start));
  const results = (await pipeline.exec()) ?? [];
  return starts.map((start, i) => {
    const [error, value] = results[i] ?? [new Error('no reply'), null];
    if (error) throw error;
    const bucket: ViolationBucket = { start, counts: [], overflow: 0 };
    for (const [field, text] of Object.entries((value ?? {}) as Record<string, string>)) {
      const count = Number(text);
      if (!Number.isSafeInteger(count) || count <= 0) continue;
      if (field === OVERFLOW_FIELD) {
        bucket.overflow += count;
        continue;
      }
      const key = parseViolationField(field);
      if (key) bucket.counts.push({ key, count });
    }
    return bucket;
  });
}

/** The newest samples (newest first) of each key, at most `limit` each. */
export async function readViolationSamples(
  redis: RedisClient,
  accountId: string,
  keys: readonly ViolationKey[],
  limit: number,
): Promise<Map<string, ViolationSample[]>> {
  const found = new Map<string, ViolationSample[]>();
  if (keys.length === 0 || limit <= 0) return found;
  const fields = [...new Set(keys.map(violationField))];
  const pipeline = redis.pipeline();
  for (const field of fields) pipeline.lrange(violationKeys.samples(accountId, field), 0, limit - 1);
  const results = (await pipeline.exec()) ?? [];
  fields.forEach((field, i) => {
    const [error, value] = results[i] ?? [new Error('no reply'), null];
    if (error) throw error;
    const samples: ViolationSample[] = [];
    for (const text of (value ?? []) as string[]) {
      try {
        const { messageId, receivedAt, message, payload } = JSON.parse(text) as ViolationSample;
        samples.push({ messageId, receivedAt, message, payload });
      } catch {
        // Not one of ours.
      }
    }
    found.set(field, samples);
  });
  return found;
}
