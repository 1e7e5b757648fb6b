import { isCluster, type RedisClient } from '@pipeline/redis';

/**
 * One rate-limit take: the write key's second and day counters, the events to count and the
 * limits, and optionally a key whose existence is answered alongside (the batch's dedupe key).
 */
export interface StoreTake {
  second: string;
  day: string;
  events: number;
  perSecond: number;
  perDay: number;
  exists?: string;
}

// Every take and mark queued in one window (REDIS_BATCH_WINDOW_MS), in one script call: per take
// (KEYS second, day, exists-or-second; ARGV events, perSecond, perDay, checkExists) check both
// windows, then count in both, atomically, so that a refused batch is not counted against the
// day, and answer 0 allowed, 1 over the second, 2 over the day, 3 allowed and the key exists;
// then per mark (KEYS key; ARGV seconds) SET it with that expiry. ARGV[1] and ARGV[2] are the
// counts of takes and marks.
const BATCH_SCRIPT = `
local takes = tonumber(ARGV[1])
local marks = tonumber(ARGV[2])
local out = {}
for i = 0, takes - 1 do
  local k = i * 3
  local a = 2 + i * 4
  local n = tonumber(ARGV[a + 1])
  local result = 0
  if tonumber(redis.call('GET', KEYS[k + 1]) or '0') + n > tonumber(ARGV[a + 2]) then
    result = 1
  elseif tonumber(redis.call('GET', KEYS[k + 2]) or '0') + n > tonumber(ARGV[a + 3]) then
    result = 2
  else
    redis.call('INCRBY', KEYS[k + 1], n)
    redis.call('EXPIRE', KEYS[k + 1], 2)
    redis.call('INCRBY', KEYS[k + 2], n)
    redis.call('EXPIRE', KEYS[k + 2], 90000)
    if ARGV[a + 4] == '1' and redis.call('EXISTS', KEYS[k + 3]) == 1 then result = 3 end
  end
  out[i + 1] = result
end
for j = 1, marks do
  redis.call('SET', KEYS[takes * 3 + j], '1', 'EX', ARGV[2 + takes * 4 + j])
end
return out`;

/**
 * A socket write to Redis costs about as much CPU as the HTTP answer (loopback, 2026-11-27); at
 * 1,000 requests/s a turn of the event loop holds about one request, so the call waits this
 * long for others. It adds at most this much to a request's time. Measured against each other
 * (docs/performance.md): 5 ms took 0.85 of 2 ms's CPU per request at the same rate; 10 ms no
 * less CPU than 5, and 0.74 of its rate over 32 connections.
 */
export const DEFAULT_WINDOW_MS = 5;

/** A script call's size: a script blocks Redis while it runs, so a burst goes in several. */
export const MAX_OPERATIONS_PER_CALL = 256;

type BatchCommand = (numberOfKeys: number, ...keysThenArgs: (string | number)[]) => Promise<number[]>;

interface Pending<T> {
  resolve: (value: T) => void;
  reject: (error: unknown) => void;
}

interface Group {
  takes: { take: StoreTake; pending: Pending<number> }[];
  marks: { key: string; seconds: number; pending: Pending<void> }[];
}

/**
 * The hash tag of a key (Redis Cluster hashes only the part in the first `{...}` when there
 * is one): keys with the same tag are in one slot, so one script may touch them all.
 */
export function hashTagOf(key: string): string {
  const open = key.indexOf('{');
  if (open >= 0) {
    const close = key.indexOf('}', open + 1);
    if (close > open + 1) return key.slice(open + 1, close);
  }
  return key;
}

/**
 * The script call's keys and arguments for a group, in the layout BATCH_SCRIPT reads.
 * Exported for its tests.
 */
export function batchArguments(group: Group): { keys: string[]; args: (string | number)[] } {
  const keys: string[] = [];
  const args: (string | number)[] = [group.takes.length, group.marks.length];
  for (const { take } of group.takes) {
    keys.push(take.second, take.day, take.exists ?? take.second);
    args.push(take.events, take.perSecond, take.perDay, take.exists === undefined ? 0 : 1);
  }
  for (const { key, seconds } of group.marks) {
    keys.push(key);
    args.push(seconds);
  }
  return { keys, args };
}

const batches = new WeakMap<RedisClient, SharedStoreBatch>();

/**
 * The shared store's per-request commands of /collect (the rate-limit take with the dedupe
 * check, and the dedupe mark after the publish), coalesced: everything asked in one window
 * (windowMs; 0: one turn of the event loop) leaves as one script call (per hash tag on a Redis
 * Cluster, where a script's keys must share a slot), instead of one command per request. Under
 * load that is one write and one reply for many requests, where each command cost ioredis's
 * JavaScript and a socket write.
 * Callers still await their own answer: a request is answered only after its mark is stored.
 */
export class SharedStoreBatch {
  private groups = new Map<string, Group>();
  private scheduled = false;
  private readonly call: BatchCommand;
  private readonly groupOf: (key: string) => string;
  /** REDIS_BATCH_WINDOW_MS: how long a call waits for more requests' commands (0: this turn only). */
  windowMs = DEFAULT_WINDOW_MS;

  private constructor(redis: RedisClient) {
    redis.defineCommand('ingestionStoreBatch', { lua: BATCH_SCRIPT });
    this.call = (redis as unknown as Record<'ingestionStoreBatch', BatchCommand>).ingestionStoreBatch.bind(
      redis,
    );
    // One server holds every key; a cluster only those of one slot per script.
    this.groupOf = isCluster(redis) ? hashTagOf : () => '';
  }

  /** The batch of a client: the rate limiter and the dedupe share it, so they share the call. */
  static for(redis: RedisClient): SharedStoreBatch {
    let batch = batches.get(redis);
    if (!batch) {
      batch = new SharedStoreBatch(redis);
      batches.set(redis, batch);
    }
    return batch;
  }

  take(take: StoreTake): Promise<number> {
    return new Promise((resolve, reject) =>
      this.group(take.second).takes.push({ take, pending: { resolve, reject } }),
    );
  }

  mark(key: string, seconds: number): Promise<void> {
    return new Promise((resolve, reject) =>
      this.group(key).marks.push({ key, seconds, pending: { resolve, reject } }),
    );
  }

  private group(key: string): Group {
    const name = this.groupOf(key);
    let group = this.groups.get(name);
    if (!group) {
      group = { takes: [], marks: [] };
      this.groups.set(name, group);
    }
    if (!this.scheduled) {
      this.scheduled = true;
      // setImmediate runs after the poll phase, when the requests read in this turn have all
      // queued theirs; a window also takes those of the next turns, for fewer, fuller calls.
      if (this.windowMs > 0) setTimeout(() => this.flush(), this.windowMs);
      else setImmediate(() => this.flush());
    }
    return group;
  }

  private flush(): void {
    this.scheduled = false;
    const groups = this.groups;
    this.groups = new Map();
    for (const group of groups.values()) {
      for (let start = 0; ; start += MAX_OPERATIONS_PER_CALL) {
        const takes = group.takes.slice(start, start + MAX_OPERATIONS_PER_CALL);
        const marks = group.marks.slice(start, start + MAX_OPERATIONS_PER_CALL);
        if (takes.length === 0 && marks.length === 0) break;
        this.send({ takes, marks });
      }
    }
  }

  private send(group: Group): void {
    const { keys, args } = batchArguments(group);
    this.call(keys.length, ...keys, ...args).then(
      (results) => {
        group.takes.forEach(({ pending }, index) => pending.resolve(Number(results[index])));
        for (const { pending } of group.marks) pending.resolve();
      },
      (error: unknown) => {
        for (const { pending } of group.takes) pending.reject(error);
        for (const { pending } of group.marks) pending.reject(error);
      },
    );
  }
}
