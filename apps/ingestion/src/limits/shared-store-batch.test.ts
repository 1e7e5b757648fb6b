import { randomUUID } from 'node:crypto';
import { PassThrough } from 'node:stream';
import fc from 'fast-check';
import { createLogger } from '@pipeline/logger';
import { closeRedis, createRedis, type Cluster, type RedisClient } from '@pipeline/redis';
import {
  batchArguments,
  callsOf,
  hashTagOf,
  MAX_OPERATIONS_PER_CALL,
  nextFlush,
  readyToSend,
  SharedStoreBatch,
  type Group,
  type StoreTake,
} from './shared-store-batch';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const logger = createLogger({ service: 'test', stream: new PassThrough(), level: 'error' });

/**
 * The script calls `client` sends while `during` runs, as MONITOR on another connection sees
 * them: its own commands only, so tests running at the same time on the same Redis do not count.
 */
type OneServer = Exclude<RedisClient, Cluster>;

async function scriptCallsOf(client: RedisClient, during: () => Promise<unknown>): Promise<number> {
  const own = client as OneServer;
  const addr = /addr=(\S+)/.exec(String(await own.client('INFO')))?.[1];
  if (!addr) throw new Error('CLIENT INFO named no address');
  const monitor = await (createRedis({ REDIS_URL }, { logger }) as OneServer).monitor();
  const marker = `end-${randomUUID()}`;
  let calls = 0;
  const ended = new Promise<void>((resolve) =>
    monitor.on('monitor', (_time: string, args: string[], source: string) => {
      if (source !== addr) return;
      const name = String(args[0]).toLowerCase();
      if (name === 'evalsha' || name === 'eval') calls += 1;
      // MONITOR relays a connection's commands in order: after the marker, all were counted.
      if (name === 'echo' && args[1] === marker) resolve();
    }),
  );
  try {
    await during();
    await own.echo(marker);
    await ended;
    return calls;
  } finally {
    monitor.disconnect();
  }
}

describe('SharedStoreBatch (real Redis)', () => {
  let redis: RedisClient;
  let admin: RedisClient;
  let prefix: string;
  const take = (key: string, events: number, perSecond: number, perDay: number, exists?: string) =>
    ({
      second: `${key}:s`,
      day: `${key}:d`,
      events,
      perSecond,
      perDay,
      ...(exists === undefined ? {} : { exists }),
    }) satisfies StoreTake;

  beforeEach(async () => {
    prefix = `test:batch:${randomUUID()}:`;
    redis = createRedis({ REDIS_URL }, { logger, keyPrefix: prefix });
    admin = createRedis({ REDIS_URL }, { logger });
    await Promise.all([redis.connect(), admin.connect()]);
  });
  afterEach(async () => {
    await Promise.all([closeRedis(redis), closeRedis(admin)]);
  });

  it("answers each take in order within one call: the second's limit, then the day's, then exists", async () => {
    const batch = SharedStoreBatch.for(redis);
    batch.windowMs = 0;
    await admin.set(`${prefix}seen`, '1');
    // Warm the script into Redis's cache, so the count below is of EVALSHA calls alone.
    await batch.take(take('warm', 1, 10, 10));
    let answers: number[] = [];
    const calls = await scriptCallsOf(redis, async () => {
      answers = await Promise.all([
        batch.take(take('a', 3, 5, 100)), // 3 of 5 this second
        batch.take(take('a', 3, 5, 100)), // 6 > 5: over the second, not counted
        batch.take(take('a', 2, 5, 100, 'seen')), // 5 of 5, and the key exists
        batch.take(take('b', 4, 100, 3)), // over b's day
        batch.take(take('c', 1, 100, 100, 'unseen')), // allowed, the key does not exist
      ]);
    });
    expect(answers).toEqual([0, 1, 3, 2, 0]);
    expect(calls).toBe(1);
    // Only what was allowed was counted, in both windows, with their expiries.
    expect(await admin.mget(`${prefix}a:s`, `${prefix}a:d`, `${prefix}b:s`, `${prefix}b:d`)).toEqual([
      '5',
      '5',
      null,
      null,
    ]);
    expect(await admin.ttl(`${prefix}a:s`)).toBeGreaterThan(0);
    expect(await admin.ttl(`${prefix}a:s`)).toBeLessThanOrEqual(2);
    expect(await admin.ttl(`${prefix}a:d`)).toBeGreaterThan(89_000);
  });

  it('stores marks with their expiry before the takes of the same call, which find them', async () => {
    const batch = SharedStoreBatch.for(redis);
    batch.windowMs = 0;
    await batch.take(take('warm', 1, 10, 10));
    let answers: unknown[] = [];
    const calls = await scriptCallsOf(redis, async () => {
      answers = await Promise.all([
        batch.mark('m1', 86_400),
        batch.mark('m2', 60),
        batch.take(take('x', 1, 9, 9, 'm1')),
        batch.take(take('x', 1, 9, 9, 'm3')),
      ]);
    });
    // A mark is queued only once its batch is published: a retry in the same call is done.
    expect(answers).toEqual([undefined, undefined, 3, 0]);
    expect(calls).toBe(1);
    expect(await batch.take(take('x', 1, 9, 9, 'm1'))).toBe(3);
    expect(await admin.ttl(`${prefix}m1`)).toBeGreaterThan(86_000);
    expect(await admin.ttl(`${prefix}m2`)).toBeGreaterThan(50);
    expect(await admin.ttl(`${prefix}m2`)).toBeLessThanOrEqual(60);
  });

  it('holds marks for the next take to ride with', async () => {
    const batch = SharedStoreBatch.for(redis);
    batch.windowMs = 0;
    await batch.take(take('warm', 1, 10, 10));
    batch.markWaitMs = 1_000;
    const calls = await scriptCallsOf(redis, async () => {
      const marked = batch.mark('held', 60);
      for (let turn = 0; turn < 5; turn += 1) await new Promise((resolve) => setImmediate(resolve));
      expect(await admin.exists(`${prefix}held`)).toBe(0);
      // The take's call carries the mark, stored first: the take finds it.
      expect(await batch.take(take('h', 1, 9, 9, 'held'))).toBe(3);
      await marked;
    });
    expect(calls).toBe(1);
  });

  it('sends marks without a take after markWaitMs, in one call', async () => {
    const batch = SharedStoreBatch.for(redis);
    await batch.take(take('warm', 1, 10, 10));
    batch.markWaitMs = 20;
    const alone = await scriptCallsOf(redis, () => batch.mark('alone', 60));
    expect(alone).toBe(1);
    expect(await admin.exists(`${prefix}alone`)).toBe(1);
  });

  it('drains at shutdown: sends held marks at once and waits for every call in flight', async () => {
    const batch = SharedStoreBatch.for(redis);
    await batch.take(take('warm', 1, 10, 10));
    batch.markWaitMs = 60_000;
    const stream = (redis as OneServer).stream;
    const settled: string[] = [];
    stream.pause();
    // A take in flight (its reply unread), then a mark held for a take that never comes.
    void batch.take(take('d', 1, 9, 9)).then(() => settled.push('take'));
    await new Promise((resolve) => setImmediate(resolve));
    void batch.mark('drained', 60).then(() => settled.push('mark'));
    const drained = batch.drain().then(() => settled.push('drained'));
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect(settled).toEqual([]);
    stream.resume();
    await drained;
    expect(settled).toEqual(['take', 'mark', 'drained']);
    expect(await admin.exists(`${prefix}drained`)).toBe(1);
    // Nothing queued: it returns at once.
    await batch.drain();
  });

  it('queues what comes while a call is in flight, and sends it as one call when that returns', async () => {
    const batch = SharedStoreBatch.for(redis);
    batch.windowMs = 0;
    await batch.take(take('warm', 1, 10, 10));
    const stream = (redis as OneServer).stream;
    let answers: number[] = [];
    const calls = await scriptCallsOf(redis, async () => {
      // The first call's reply is not read while the socket is paused: it stays in flight.
      stream.pause();
      const first = batch.take(take('f', 1, 100, 100));
      const later: Promise<number>[] = [];
      for (let turn = 0; turn < 3; turn += 1) {
        await new Promise((resolve) => setImmediate(resolve));
        later.push(batch.take(take('f', 1, 100, 100)));
      }
      await new Promise((resolve) => setTimeout(resolve, 0));
      stream.resume();
      answers = await Promise.all([first, ...later]);
    });
    expect(answers).toEqual([0, 0, 0, 0]);
    expect(calls).toBe(2);
    expect(await admin.get(`${prefix}f:s`)).toBe('4');
  });

  it('waits its window for the commands of later turns, then sends them as one call', async () => {
    const batch = SharedStoreBatch.for(redis);
    await batch.take(take('warm', 1, 10, 10));
    batch.windowMs = 30;
    const calls = await scriptCallsOf(redis, async () => {
      const first = batch.take(take('w', 1, 100, 100));
      await new Promise((resolve) => setImmediate(resolve)); // a later turn of the event loop
      const second = batch.mark('w-mark', 60);
      await new Promise((resolve) => setImmediate(resolve));
      const third = batch.take(take('w', 1, 100, 100));
      expect(await Promise.all([first, second, third])).toEqual([0, undefined, 0]);
    });
    expect(calls).toBe(1);
    expect(await admin.get(`${prefix}w:s`)).toBe('2');
  });

  it('splits a burst into calls of at most MAX_OPERATIONS_PER_CALL and answers every take', async () => {
    const batch = SharedStoreBatch.for(redis);
    batch.windowMs = 0;
    await batch.take(take('warm', 1, 10, 10));
    const count = MAX_OPERATIONS_PER_CALL * 2 + 1;
    let answers: number[] = [];
    const calls = await scriptCallsOf(redis, async () => {
      answers = await Promise.all(
        Array.from({ length: count }, () => batch.take(take('burst', 1, count - 1, 1_000_000))),
      );
    });
    // The last take in order is the one over the second's limit.
    expect(answers.slice(0, count - 1).every((answer) => answer === 0)).toBe(true);
    expect(answers[count - 1]).toBe(1);
    expect(calls).toBe(3);
  });

  it('rejects every take and mark of a call when Redis fails it', async () => {
    const batch = SharedStoreBatch.for(redis);
    batch.windowMs = 0;
    await admin.set(`${prefix}not-a-number:s`, 'text');
    const results = await Promise.allSettled([
      batch.take(take('not-a-number', 1, 5, 5)),
      batch.mark('m', 60),
    ]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
  });

  it('is one per client: the rate limiter and the dedupe share it', () => {
    expect(SharedStoreBatch.for(redis)).toBe(SharedStoreBatch.for(redis));
    expect(SharedStoreBatch.for(redis)).not.toBe(SharedStoreBatch.for(admin));
  });
});

describe('batchArguments', () => {
  it('lays out three keys and four arguments per take, then one of each per mark', () => {
    const pending = { resolve: () => undefined, reject: () => undefined };
    expect(
      batchArguments({
        takes: [
          { take: { second: 's1', day: 'd1', events: 3, perSecond: 5, perDay: 9 }, pending },
          { take: { second: 's2', day: 'd2', events: 1, perSecond: 6, perDay: 7, exists: 'e2' }, pending },
        ],
        marks: [{ key: 'm1', seconds: 60, pending }],
      }),
    ).toEqual({
      keys: ['s1', 'd1', 's1', 's2', 'd2', 'e2', 'm1'],
      args: [2, 1, 3, 5, 9, 0, 1, 6, 7, 1, 60],
    });
  });
});

describe('when a queue leaves', () => {
  const pending = { resolve: () => undefined, reject: () => undefined };
  const takeOf = (n: number) => ({
    take: { second: `s${n}`, day: 'd', events: 1, perSecond: 9, perDay: 9 },
    pending,
  });
  const markOf = (n: number) => ({ key: `m${n}`, seconds: 60, pending });
  const group = (takes: number, marks: number): Group => ({
    takes: Array.from({ length: takes }, (_, i) => takeOf(i)),
    marks: Array.from({ length: marks }, (_, i) => markOf(i)),
  });

  it('sends an idle queue with a take on any flush, marks alone only on their timer', () => {
    expect(readyToSend({ group: group(1, 0), inFlight: 0 }, 'take')).toBe(true);
    expect(readyToSend({ group: group(1, 2), inFlight: 0 }, 'take')).toBe(true);
    expect(readyToSend({ group: group(1, 0), inFlight: 0 }, 'mark')).toBe(true);
    expect(readyToSend({ group: group(0, 1), inFlight: 0 }, 'take')).toBe(false);
    expect(readyToSend({ group: group(0, 1), inFlight: 0 }, 'mark')).toBe(true);
    expect(readyToSend({ group: group(0, 0), inFlight: 0 }, 'mark')).toBe(false);
    expect(readyToSend({ group: group(0, 0), inFlight: 0 }, 'take')).toBe(false);
  });

  it('holds a queue back while a call of it is in flight', () => {
    for (const kind of ['take', 'mark'] as const) {
      expect(readyToSend({ group: group(3, 3), inFlight: 1 }, kind)).toBe(false);
      expect(readyToSend({ group: group(3, 3), inFlight: 2 }, kind)).toBe(false);
    }
  });

  it("schedules, when a queue's last call returns, a take's flush, the marks' timer or nothing", () => {
    expect(nextFlush({ group: group(1, 0), inFlight: 0 })).toBe('take');
    expect(nextFlush({ group: group(2, 5), inFlight: 0 })).toBe('take');
    expect(nextFlush({ group: group(0, 1), inFlight: 0 })).toBe('mark');
    expect(nextFlush({ group: group(0, 0), inFlight: 0 })).toBeNull();
    // Another call of the queue still in flight schedules when it returns.
    expect(nextFlush({ group: group(1, 1), inFlight: 1 })).toBeNull();
  });

  it('splits a queue into calls of at most MAX_OPERATIONS_PER_CALL takes and marks, in order', () => {
    expect(callsOf(group(0, 0))).toEqual([]);
    const max = MAX_OPERATIONS_PER_CALL;
    const calls = callsOf(group(max + 1, 2 * max + 1));
    expect(calls.map((c) => [c.takes.length, c.marks.length])).toEqual([
      [max, max],
      [1, max],
      [0, 1],
    ]);
    expect(calls.flatMap((c) => c.takes.map((t) => t.take.second))).toEqual(
      Array.from({ length: max + 1 }, (_, i) => `s${i}`),
    );
    expect(calls.flatMap((c) => c.marks.map((m) => m.key))).toEqual(
      Array.from({ length: 2 * max + 1 }, (_, i) => `m${i}`),
    );
    expect(callsOf(group(max, 0)).map((c) => c.takes.length)).toEqual([max]);
    expect(callsOf(group(0, 1))).toEqual([{ takes: [], marks: [markOf(0)] }]);
  });
});

describe('hashTagOf', () => {
  it('is the first {...} with something inside, as Redis Cluster hashes it', () => {
    expect(hashTagOf('rl:s:{wk_1}:17')).toBe('wk_1');
    expect(hashTagOf('a{b}c{d}')).toBe('b');
    expect(hashTagOf('a{}b{c}')).toBe('a{}b{c}');
    expect(hashTagOf('a{b')).toBe('a{b');
    expect(hashTagOf('a}b{c}')).toBe('c');
    expect(hashTagOf('plain')).toBe('plain');
    // A '}' before the first '{' closes nothing.
    expect(hashTagOf('x}y')).toBe('x}y');
    expect(hashTagOf('}{b}')).toBe('b');
  });

  it('gives keys that share a tag one group, whatever surrounds it', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: 'grapheme', minLength: 1 }).filter((tag) => !tag.includes('}')),
        fc.string({ unit: 'grapheme' }).filter((s) => !s.includes('{')),
        fc.string({ unit: 'grapheme' }),
        (tag, before, after) => hashTagOf(`${before}{${tag}}${after}`) === tag,
      ),
    );
  });
});
