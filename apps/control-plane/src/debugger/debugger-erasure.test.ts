import { randomBytes, randomUUID } from 'node:crypto';
import { PassThrough } from 'node:stream';
import fc from 'fast-check';
import { createLogger } from '@pipeline/logger';
import {
  createRedis,
  debuggerKeys,
  debugPayload,
  DebugStreamWriter,
  type DebugEventRecord,
  type DeliveryOutcomeRecord,
  type RedisClient,
} from '@pipeline/redis';
import { RegulatedSubjects, subjectHash, type EventIdentity, type SubjectType } from '@pipeline/tenancy';
import { waitUntil } from '../testing/wait';
import { eraseFromDebugger } from './debugger-erasure';

// Erasing regulated subjects' events from the live debugger's streams (a deletion reaches our
// own copies too) on a real Redis. Entries are written by the real DebugStreamWriter, shaped as
// ingestion's DebugRecorder and delivery's RedisOutcomeRecorder shape them; every write key is
// a fresh uuid, so each test's streams are its own.

const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
const logger = createLogger({ service: 'debugger-erasure-test', stream: new PassThrough() });
const hashKey = randomBytes(32);

const regulationOf = (
  subjects: { type: SubjectType; id: string; suppressed?: boolean; deleteCutoff?: string | null }[],
) =>
  new RegulatedSubjects({
    hashKey: hashKey.toString('base64'),
    subjects: subjects.map((s) => ({
      hash: subjectHash(hashKey, s.type, s.id),
      suppressed: s.suppressed ?? true,
      deleteCutoff: s.deleteCutoff ?? null,
    })),
  });

type StreamEntry = [string, string[]];

describe('debugger erasure (real Redis)', () => {
  let redis: RedisClient;
  let writer: DebugStreamWriter;
  const keys: string[] = [];

  beforeAll(async () => {
    redis = createRedis({ REDIS_URL }, { logger });
    await redis.connect();
    writer = new DebugStreamWriter(redis, { maxLen: 500, ttlSeconds: 600, maxPerSecond: 1_000_000 }, logger);
  });

  afterAll(async () => {
    if (keys.length > 0) await redis.del(...keys);
    redis.disconnect();
  });

  const writeKey = () => {
    const id = `erasure-test-${randomUUID()}`;
    keys.push(debuggerKeys.events(id), debuggerKeys.outcomes(id));
    return id;
  };

  let added = 0;
  const add = (key: string, fields: string[]) => {
    added += 1;
    writer.add(key, fields);
  };
  /** Waits until Redis acknowledged every entry added so far. */
  const flushed = async () => {
    await waitUntil('the debugger writer to send its queue', async () => writer.stats.recorded >= added);
    expect(writer.stats).toMatchObject({ failed: 0, sampledOut: 0 });
  };

  /** An event as ingestion's DebugRecorder records it, with its delivery outcomes (two by default). */
  const recordEvent = (
    writeKeyId: string,
    input: Record<string, unknown>,
    receivedAt = new Date(),
    destinations = ['warehouse', 'amplitude'],
  ) => {
    const { payload, truncated } = debugPayload(input);
    const record: DebugEventRecord = {
      receivedAt: receivedAt.toISOString(),
      requestId: randomUUID(),
      status: 'accepted',
      type: typeof input.type === 'string' ? input.type : null,
      event: typeof input.event === 'string' ? input.event : null,
      messageId: typeof input.messageId === 'string' ? input.messageId : null,
      errors: [],
      payload,
      ...(truncated ? { truncated: true as const } : {}),
    };
    add(debuggerKeys.events(writeKeyId), ['d', JSON.stringify(record)]);
    if (typeof input.messageId !== 'string') return;
    for (const destination of destinations) {
      const outcome: DeliveryOutcomeRecord = {
        destination,
        integrationId: null,
        outcome: 'delivered',
        reason: null,
        at: new Date().toISOString(),
      };
      add(debuggerKeys.outcomes(writeKeyId), ['m', input.messageId, 'd', JSON.stringify(outcome)]);
    }
  };

  const all = async (key: string) => (await redis.xrange(key, '-', '+')) as StreamEntry[];
  const messageIdsIn = async (writeKeyId: string) =>
    (await all(debuggerKeys.events(writeKeyId))).map(
      ([, fields]) => (JSON.parse(fields[1]!) as DebugEventRecord).messageId,
    );
  const outcomeIdsIn = async (writeKeyId: string) =>
    (await all(debuggerKeys.outcomes(writeKeyId))).map(([, fields]) => fields[1]);

  it("removes the subject's events and their outcomes from each write key given, and keeps the others'", async () => {
    const [k1, k2, elsewhere] = [writeKey(), writeKey(), writeKey()];
    const regulation = regulationOf([{ type: 'USER_ID', id: 'user-x' }]);
    const x1 = {
      type: 'track',
      event: 'A',
      messageId: randomUUID(),
      userId: 'user-x',
      anonymousId: 'anon-1',
    };
    const x2 = { type: 'alias', messageId: randomUUID(), userId: 'user-new', previousId: 'user-x' };
    const y = { type: 'track', event: 'B', messageId: randomUUID(), userId: 'user-y' };
    const z = { type: 'identify', messageId: randomUUID(), anonymousId: 'user-x' };
    for (const input of [x1, y, x2, z]) recordEvent(k1, input);
    const x3 = { type: 'page', messageId: randomUUID(), userId: 'user-x' };
    recordEvent(k2, x3);
    // Another account's write key (not given) with the same user id: untouched.
    const other = { type: 'track', messageId: randomUUID(), userId: 'user-x' };
    recordEvent(elsewhere, other);
    await flushed();

    // Three events of x, two outcomes each.
    expect(await eraseFromDebugger(redis, [k1, k2], regulation)).toEqual({ removed: 9 });
    expect(await messageIdsIn(k1)).toEqual([y.messageId, z.messageId]);
    expect(await outcomeIdsIn(k1)).toEqual([y.messageId, y.messageId, z.messageId, z.messageId]);
    expect(await messageIdsIn(k2)).toEqual([]);
    expect(await outcomeIdsIn(k2)).toEqual([]);
    expect(await messageIdsIn(elsewhere)).toEqual([other.messageId]);
    expect(await outcomeIdsIn(elsewhere)).toEqual([other.messageId, other.messageId]);
    expect(await eraseFromDebugger(redis, [k1, k2], regulation)).toEqual({ removed: 0 });
  });

  it('reads the id of a payload recorded truncated, and keeps events received after a deletion cut-off', async () => {
    const k = writeKey();
    const longId = `ü${'x'.repeat(300)}`;
    const cutoff = new Date('2026-11-20T12:00:00.000Z');
    const regulation = regulationOf([
      { type: 'USER_ID', id: longId },
      { type: 'ANONYMOUS_ID', id: 'anon-d', suppressed: false, deleteCutoff: cutoff.toISOString() },
    ]);
    const big = {
      userId: longId,
      type: 'track',
      messageId: randomUUID(),
      properties: { pad: 'p'.repeat(20_000) },
    };
    const before = { type: 'track', messageId: randomUUID(), anonymousId: 'anon-d' };
    const after = { type: 'track', messageId: randomUUID(), anonymousId: 'anon-d' };
    recordEvent(k, big);
    recordEvent(k, before, cutoff);
    recordEvent(k, after, new Date(cutoff.getTime() + 1));
    await flushed();
    const [stored] = await all(debuggerKeys.events(k));
    // The recorded payload lost the 301-character id from its scalars: only its JSON start has it.
    expect((JSON.parse(stored![1][1]!) as DebugEventRecord).payload.userId).toBeUndefined();
    expect(await eraseFromDebugger(redis, [k], regulation)).toEqual({ removed: 6 });
    expect(await messageIdsIn(k)).toEqual([after.messageId]);
    expect(await outcomeIdsIn(k)).toEqual([after.messageId, after.messageId]);
  });

  it('pages through streams longer than a page', async () => {
    const k = writeKey();
    const regulation = regulationOf([{ type: 'USER_ID', id: 'user-x' }]);
    const kept: string[] = [];
    // 450 entries in each stream: under the cap of 500, over two pages of 200.
    for (let n = 0; n < 450; n += 1) {
      const messageId = `m-${n}`;
      recordEvent(k, { type: 'track', messageId, userId: n % 3 === 0 ? 'user-x' : `u-${n}` }, new Date(), [
        'warehouse',
      ]);
      if (n % 3 !== 0) kept.push(messageId);
    }
    await flushed();
    expect(await redis.xlen(debuggerKeys.outcomes(k))).toBe(450);
    expect(await eraseFromDebugger(redis, [k], regulation)).toEqual({ removed: 150 * 2 });
    expect(await messageIdsIn(k)).toEqual(kept);
    expect(await outcomeIdsIn(k)).toEqual(kept);
  });

  it('property: no entry left is decided, and every undecided one is still there exactly once', async () => {
    const anyId = fc.string({ unit: 'binary', minLength: 1, maxLength: 12 });
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(anyId, { minLength: 1, maxLength: 3 }),
        fc.array(
          fc.record({
            subject: fc.nat(5),
            field: fc.constantFrom('userId', 'anonymousId', 'previousId'),
            other: anyId,
            messageId: anyId,
          }),
          { minLength: 1, maxLength: 30 },
        ),
        async (subjectIds, events) => {
          const k = writeKey();
          const regulation = regulationOf(subjectIds.map((id) => ({ type: 'USER_ID' as const, id })));
          const inputs = events.map(({ subject, field, other, messageId }, n) => ({
            type: 'track',
            messageId: `${n}:${messageId}`,
            [field]: subjectIds[subject] ?? other,
          }));
          for (const input of inputs) recordEvent(k, input);
          await flushed();
          await eraseFromDebugger(redis, [k], regulation);
          const kept = inputs
            .filter((input) => regulation.decide(input as EventIdentity, Date.now()) === null)
            .map((i) => i.messageId);
          const left = await all(debuggerKeys.events(k));
          for (const [, fields] of left)
            expect(
              regulation.decide((JSON.parse(fields[1]!) as DebugEventRecord).payload, Date.now()),
            ).toBeNull();
          expect(await messageIdsIn(k)).toEqual(kept);
          expect(await outcomeIdsIn(k)).toEqual(kept.flatMap((id) => [id, id]));
        },
      ),
      { numRuns: 30 },
    );
  }, 60_000);
});
