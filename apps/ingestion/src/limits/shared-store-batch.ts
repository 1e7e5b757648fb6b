import { isCluster, type RedisClient } from '@pipeline/redis';
import { DAY_WINDOW_TTL_SECONDS, SECOND_WINDOW_TTL_SECONDS } from '@pipeline/tenancy';

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

// Every take and mark queued for one call, in one script call: first per mark (KEYS key; ARGV
// seconds) SET it with that expiry, then per take (KEYS second, day, exists-or-second; ARGV
// events, perSecond, perDay, checkExists) check both windows, then count in both, atomically,
// so that a refused batch is not counted against the day, and answer 0 allowed, 1 over the
// second, 2 over the day, 3 allowed and the key exists. ARGV[1] and ARGV[2] are the counts of
// takes and marks. Marks go first: a mark is queued only once its batch was published, so a
// retry whose take shares the call with its first try's mark is rightly found done.
const BATCH_SCRIPT = `
local takes = tonumber(ARGV[1])
local marks = tonumber(ARGV[2])
for j = 1, marks do
  redis.call('SET', KEYS[takes * 3 + j], '1', 'EX', ARGV[2 + takes * 4 + j])
end
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
    redis.call('EXPIRE', KEYS[k + 1], ${SECOND_WINDOW_TTL_SECONDS})
    redis.call('INCRBY', KEYS[k + 2], n)
    redis.call('EXPIRE', KEYS[k + 2], ${DAY_WINDOW_TTL_SECONDS})
    if ARGV[a + 4] == '1' and redis.call('EXISTS', KEYS[k + 3]) == 1 then result = 3 end
  end
  out[i + 1] = result
end
return out`;

/**
 * 0: a call leaves at the end of the event-loop turn its first take was queued in, or, while an
 * earlier call of its group is in flight, as soon as that one returns. Under load the calls
 * fill by themselves; a fixed wait only adds to every request's time. Measured
 * (docs/performance.md): a 5 ms window gave 0.57 of the rate over 32 connections, for 0.95 of
 * the CPU per request.
 */
export const DEFAULT_WINDOW_MS = 0;

/**
 * A mark holds up no request (/collect answers once its batch is published), so marks wait this
 * long for a take of their group to ride with, instead of a call of their own. A take's call
 * carries every mark queued before it: a retry still finds its first try's mark.
 */
export const MARK_WAIT_MS = 5;

/** A script call's size: a script blocks Redis while it runs, so a burst goes in several. */
export const MAX_OPERATIONS_PER_CALL = 256;

type BatchCommand = (numberOfKeys: number, ...keysThenArgs: (string | number)[]) => Promise<number[]>;

interface Pending<T> {
  resolve: (value: T) => void;
  reject: (error: unknown) => void;
}

export interface Group {
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

/** A group's queued commands, and how many calls of it are on their way. */
export interface Queue {
  group: Group;
  inFlight: number;
}

/** What wakes a flush: a take (this turn, or windowMs) or the marks' timer (markWaitMs). */
export type FlushKind = 'take' | 'mark';

const isEmpty = (group: Group) => group.takes.length === 0 && group.marks.length === 0;

/**
 * Whether a flush sends a group's queue now: not while a call of it is in flight (what it
 * queued leaves when that returns), and marks alone only on their timer. Exported for its tests.
 */
export function readyToSend(queue: Queue, kind: FlushKind): boolean {
  if (queue.inFlight > 0 || isEmpty(queue.group)) return false;
  return kind === 'mark' || queue.group.takes.length > 0;
}

/** The flush a group's last returning call schedules for what it queued meanwhile, if any. */
export function nextFlush(queue: Queue): FlushKind | null {
  if (queue.inFlight > 0) return null;
  if (queue.group.takes.length > 0) return 'take';
  return queue.group.marks.length > 0 ? 'mark' : null;
}

/** A queue's commands as script calls of at most MAX_OPERATIONS_PER_CALL takes and marks. */
export function callsOf(group: Group): Group[] {
  const calls: Group[] = [];
  for (
    let start = 0;
    start < Math.max(group.takes.length, group.marks.length);
    start += MAX_OPERATIONS_PER_CALL
  ) {
    calls.push({
      takes: group.takes.slice(start, start + MAX_OPERATIONS_PER_CALL),
      marks: group.marks.slice(start, start + MAX_OPERATIONS_PER_CALL),
    });
  }
  return calls;
}

const batches = new WeakMap<RedisClient, SharedStoreBatch>();

/**
 * The shared store's per-request commands of /collect (the rate-limit take with the dedupe
 * check, and the dedupe mark after the publish), coalesced as a group commit: what is queued
 * while a call is in flight leaves as the next call when it returns, and what is queued while
 * none is, at the end of the turn (or after windowMs; marks after markWaitMs unless a take
 * leaves first). One script call per group: per hash tag on a Redis Cluster, where a script's
 * keys must share a slot. Under load that is one write and one reply for many requests, where
 * each command cost ioredis's JavaScript and a socket write.
 */
export class SharedStoreBatch {
  private queues = new Map<string, Queue>();
  private takesScheduled = false;
  private marksScheduled = false;
  private readonly inFlight = new Set<Promise<void>>();
  private readonly call: BatchCommand;
  private readonly groupOf: (key: string) => string;
  /** REDIS_BATCH_WINDOW_MS: how long a call waits for more requests' commands (0: this turn only). */
  windowMs = DEFAULT_WINDOW_MS;
  /** How long a mark waits for a take to ride with (MARK_WAIT_MS); its tests set it. */
  markWaitMs = MARK_WAIT_MS;

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
      this.group(take.second, 'take').takes.push({ take, pending: { resolve, reject } }),
    );
  }

  mark(key: string, seconds: number): Promise<void> {
    return new Promise((resolve, reject) =>
      this.group(key, 'mark').marks.push({ key, seconds, pending: { resolve, reject } }),
    );
  }

  /**
   * Sends everything queued, without waiting for a window or a take, and waits until no call is
   * in flight: at shutdown, before the connection closes, so that no mark is left behind.
   */
  async drain(): Promise<void> {
    for (;;) {
      this.flush('mark');
      if (this.inFlight.size === 0) return;
      await Promise.all(this.inFlight);
    }
  }

  private group(key: string, kind: FlushKind): Group {
    const name = this.groupOf(key);
    let queue = this.queues.get(name);
    if (!queue) {
      queue = { group: { takes: [], marks: [] }, inFlight: 0 };
      this.queues.set(name, queue);
    }
    // While a call is in flight, its return schedules the next.
    if (queue.inFlight === 0) this.schedule(kind);
    return queue.group;
  }

  private schedule(kind: FlushKind): void {
    if (kind === 'mark') {
      if (this.marksScheduled) return;
      this.marksScheduled = true;
      setTimeout(() => this.flush('mark'), this.markWaitMs);
      return;
    }
    if (this.takesScheduled) return;
    this.takesScheduled = true;
    // setImmediate runs after the poll phase, when the requests read in this turn have all
    // queued theirs; a window also takes those of the next turns.
    if (this.windowMs > 0) setTimeout(() => this.flush('take'), this.windowMs);
    else setImmediate(() => this.flush('take'));
  }

  private flush(kind: FlushKind): void {
    if (kind === 'mark') this.marksScheduled = false;
    else this.takesScheduled = false;
    for (const [name, queue] of this.queues) {
      if (queue.inFlight === 0 && isEmpty(queue.group)) {
        this.queues.delete(name);
        continue;
      }
      if (!readyToSend(queue, kind)) continue;
      const calls = callsOf(queue.group);
      queue.group = { takes: [], marks: [] };
      queue.inFlight += calls.length;
      for (const call of calls) {
        const sent: Promise<void> = this.send(call).finally(() => {
          this.inFlight.delete(sent);
          queue.inFlight -= 1;
          const next = nextFlush(queue);
          if (next) this.schedule(next);
        });
        this.inFlight.add(sent);
      }
    }
  }

  private send(group: Group): Promise<void> {
    const { keys, args } = batchArguments(group);
    return this.call(keys.length, ...keys, ...args).then(
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
