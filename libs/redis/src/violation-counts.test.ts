import { randomUUID } from 'node:crypto';
import { PassThrough } from 'node:stream';
import fc from 'fast-check';
import { createLogger } from '@pipeline/logger';
import { createRedis, type RedisClient } from './redis-client';
import {
  MAX_KEY_TEXT,
  OVERFLOW_FIELD,
  parseViolationField,
  readViolationBuckets,
  readViolationSamples,
  violationField,
  violationKeys,
  ViolationLedger,
  type ViolationKey,
} from './violation-counts';

const logger = createLogger({ service: 'violation-counts-test', stream: new PassThrough() });
const HOUR = 3_600_000;
const MINUTE = 60_000;

const key = (over: Partial<ViolationKey> = {}): ViolationKey => ({
  planId: 'plan-1',
  version: 2,
  writeKeyId: 'wk-1',
  eventType: 'track',
  eventName: 'Order Completed',
  code: 'missing_required',
  path: '/properties/total',
  ...over,
});

const sampleOf = (messageId: string) => () => ({
  messageId,
  receivedAt: '2026-11-29T10:00:00.000Z',
  message: 'must have required property total',
  payload: { type: 'track', messageId },
});

describe('violation fields', () => {
  it('round-trip every key, full Unicode and null names and versions included', () => {
    const text = fc.string({ unit: 'binary', maxLength: MAX_KEY_TEXT });
    fc.assert(
      fc.property(
        fc.record({
          planId: text,
          version: fc.option(fc.integer({ min: 1, max: 1_000_000 }), { nil: null }),
          writeKeyId: text,
          eventType: text,
          eventName: fc.option(text, { nil: null }),
          code: text,
          path: text,
        }),
        (k) => {
          const field = violationField(k);
          expect(field).not.toBe(OVERFLOW_FIELD);
          expect(parseViolationField(field)).toEqual(k);
        },
      ),
    );
  });

  it('cut long names and paths to MAX_KEY_TEXT characters', () => {
    const long = key({ eventName: 'e'.repeat(MAX_KEY_TEXT + 10), path: `/properties/${'p'.repeat(400)}` });
    const parsed = parseViolationField(violationField(long));
    expect(parsed?.eventName).toBe('e'.repeat(MAX_KEY_TEXT));
    expect(parsed?.path).toHaveLength(MAX_KEY_TEXT);
    expect(parsed?.path.startsWith('/properties/ppp')).toBe(true);
  });

  it.each([
    ['overflow'],
    ['{}'],
    ['["p",1,"w","track",null,"c"]'],
    ['["p","1","w","track",null,"c","/x"]'],
    ['["p",1.5,"w","track",null,"c","/x"]'],
    ['["p",1,"w","track",3,"c","/x"]'],
    ['[1,1,"w","track",null,"c","/x"]'],
    ['["p",1,"w","track",null,"c",null]'],
  ])('refuse %s as a key', (field) => {
    expect(parseViolationField(field)).toBeUndefined();
  });
});

describe('ViolationLedger (real Redis)', () => {
  let redis: RedisClient;
  beforeAll(async () => {
    redis = createRedis({ REDIS_URL: process.env.REDIS_URL || 'redis://127.0.0.1:6379' }, { logger });
    await redis.connect();
  });
  afterAll(() => redis.disconnect());

  const until = async (check: () => boolean | Promise<boolean>) => {
    const deadline = Date.now() + 3000;
    while (!(await check())) {
      if (Date.now() > deadline) throw new Error('timed out');
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  };

  it('counts per key in minute and hour buckets, with TTLs, and reads them back', async () => {
    const account = randomUUID();
    let now = Date.UTC(2026, 10, 29, 10, 59, 30);
    const ledger = new ViolationLedger(redis, logger, {}, () => now);
    const missing = key();
    const wrong = key({ code: 'type_mismatch', path: '/properties/price' });
    ledger.record(account, [
      { key: missing, count: 70, sample: sampleOf('m-1') },
      { key: wrong, count: 30, sample: sampleOf('m-2') },
    ]);
    await until(() => ledger.stats.recorded === 100);
    now += MINUTE; // the next minute, and the next hour
    ledger.record(account, [{ key: missing, count: 5, sample: sampleOf('m-3') }]);
    await until(() => ledger.stats.recorded === 105);

    const start = Date.UTC(2026, 10, 29, 10);
    const minutes = await readViolationBuckets(
      redis,
      account,
      'minute',
      start + 59 * MINUTE,
      start + 61 * MINUTE,
    );
    expect(minutes.map((b) => b.start)).toEqual([start + 59 * MINUTE, start + 60 * MINUTE]);
    expect(minutes[0]?.counts.sort((a, b) => b.count - a.count)).toEqual([
      { key: missing, count: 70 },
      { key: wrong, count: 30 },
    ]);
    expect(minutes[1]?.counts).toEqual([{ key: missing, count: 5 }]);
    const hours = await readViolationBuckets(redis, account, 'hour', start, start + 2 * HOUR);
    expect(hours.map((b) => b.counts.reduce((sum, c) => sum + c.count, 0))).toEqual([100, 5]);
    expect(hours.map((b) => b.overflow)).toEqual([0, 0]);

    const minuteTtl = await redis.ttl(violationKeys.bucket(account, 'minute', start + 59 * MINUTE));
    const hourTtl = await redis.ttl(violationKeys.bucket(account, 'hour', start));
    expect(minuteTtl).toBeGreaterThan(2 * 86_400 - 60);
    expect(minuteTtl).toBeLessThanOrEqual(2 * 86_400);
    expect(hourTtl).toBeGreaterThan(32 * 86_400 - 60);
  });

  it('keeps at most one sample a minute per key, the newest first, capped per key', async () => {
    const account = randomUUID();
    let now = Date.UTC(2026, 10, 29, 12);
    const ledger = new ViolationLedger(redis, logger, { samplesPerKey: 3 }, () => now);
    let built = 0;
    for (let i = 0; i < 6; i += 1) {
      // Two records in the same minute: only the first is sampled.
      for (const suffix of ['a', 'b'])
        ledger.record(account, [
          {
            key: key(),
            count: 1,
            sample: () => {
              built += 1;
              return sampleOf(`m-${i}${suffix}`)();
            },
          },
        ]);
      await until(() => ledger.stats.recorded === 2 * (i + 1));
      now += MINUTE;
    }
    expect(built).toBe(6);
    const samples = await readViolationSamples(redis, account, [key(), key({ code: 'other' })], 10);
    expect(samples.get(violationField(key()))?.map((s) => s.messageId)).toEqual(['m-5a', 'm-4a', 'm-3a']);
    expect(samples.get(violationField(key({ code: 'other' })))).toEqual([]);
  });

  it('caps distinct keys per bucket and sample lists per account; the rest is overflow', async () => {
    const account = randomUUID();
    const now = Date.UTC(2026, 10, 29, 14);
    const ledger = new ViolationLedger(redis, logger, { maxKeysPerBucket: 3, maxSampleLists: 2 }, () => now);
    const entries = Array.from({ length: 10 }, (_, i) => ({
      key: key({ path: `/properties/p${i}` }),
      count: i + 1,
      sample: sampleOf(`m-${i}`),
    }));
    ledger.record(account, entries);
    await until(() => ledger.stats.recorded === 55);
    const [bucket] = await readViolationBuckets(redis, account, 'minute', now, now + MINUTE);
    // The script takes keys in the order recorded: three distinct keys, the rest overflow.
    expect(bucket?.counts.map((c) => c.count).sort((a, b) => a - b)).toEqual([1, 2, 3]);
    expect(bucket?.overflow).toBe(55 - 6);
    expect(await redis.zcard(violationKeys.sampleLists(account))).toBe(2);
    // A key already in a full bucket still counts as itself.
    ledger.record(account, [{ key: key({ path: '/properties/p0' }), count: 4, sample: sampleOf('x') }]);
    await until(() => ledger.stats.recorded === 59);
    const [again] = await readViolationBuckets(redis, account, 'minute', now, now + MINUTE);
    expect(again?.counts.find((c) => c.key.path === '/properties/p0')?.count).toBe(5);
  });

  it('tells isolation by account: another account reads nothing', async () => {
    const [one, other] = [randomUUID(), randomUUID()];
    const now = Date.UTC(2026, 10, 29, 16);
    const ledger = new ViolationLedger(redis, logger, {}, () => now);
    ledger.record(one, [{ key: key(), count: 9, sample: sampleOf('m') }]);
    await until(() => ledger.stats.recorded === 9);
    const [mine] = await readViolationBuckets(redis, one, 'hour', now, now + HOUR);
    const [theirs] = await readViolationBuckets(redis, other, 'hour', now, now + HOUR);
    expect(mine?.counts).toEqual([{ key: key(), count: 9 }]);
    expect(theirs).toEqual({ start: now, counts: [], overflow: 0 });
    expect((await readViolationSamples(redis, other, [key()], 5)).get(violationField(key()))).toEqual([]);
  });

  it('counts violations it could not write as failed: no Redis, or one that is not ready', () => {
    const none = new ViolationLedger(null, logger);
    none.record('a', [{ key: key(), count: 3, sample: sampleOf('m') }]);
    expect(none.stats).toEqual({ recorded: 0, failed: 3 });
    const closed = createRedis({ REDIS_URL: 'redis://127.0.0.1:6379' }, { logger });
    const idle = new ViolationLedger(closed, logger);
    idle.record('a', [{ key: key(), count: 2, sample: sampleOf('m') }]);
    expect(idle.stats).toEqual({ recorded: 0, failed: 2 });
    closed.disconnect();
  });

  it('refuses a read past the bucket cap, and reads an empty span as no buckets', async () => {
    await expect(readViolationBuckets(redis, 'a', 'minute', 0, 1_441 * MINUTE)).rejects.toThrow(RangeError);
    await expect(readViolationBuckets(redis, 'a', 'hour', HOUR, HOUR)).resolves.toEqual([]);
  });
});
