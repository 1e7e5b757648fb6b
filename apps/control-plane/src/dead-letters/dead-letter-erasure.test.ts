import { randomBytes, randomUUID } from 'node:crypto';
import { PassThrough } from 'node:stream';
import fc from 'fast-check';
import { loadConfig } from '@pipeline/config';
import type { OutboxEnvelope } from '@pipeline/events';
import { deliveryHeaders, deliveryTopicsFor } from '@pipeline/destinations';
import { createKafka, createProducer, ensureTopics, kafkaConfigSchema } from '@pipeline/kafka';
import { createLogger } from '@pipeline/logger';
import { RegulatedSubjects, subjectHash, type RegulatedSubject, type SubjectType } from '@pipeline/tenancy';
import { AccountService } from '../accounts/account.service';
import { createMigratedScratchDatabase, type MigratedScratchDatabase } from '../scratch-data-source';
import { waitUntil } from '../testing/wait';
import { eraseFromDeadLetters, type DeadLetterErasure } from './dead-letter-erasure';
import {
  DeadLetterIndex,
  DeadLetterIndexer,
  storedEventsOf,
  type DeadLetterRegulation,
  type IndexOutcome,
} from './dead-letter-index';

// Erasing regulated subjects' events from the dead-letter index (a deletion reaches our own
// copies too), and the indexer never storing them again, against a real migrated PostgreSQL
// database (and real Kafka for the indexer's consumer). Regulations are real RegulatedSubjects of keyed hashes.

const logger = createLogger({ service: 'dead-letter-erasure-test', stream: new PassThrough() });

interface TestEvent {
  type: string;
  messageId: string;
  userId?: string;
  anonymousId?: string;
  previousId?: string;
  event?: string;
  properties?: Record<string, unknown>;
}

interface Row {
  id: string;
  status: string;
  record_key: Buffer | null;
  record_value: Buffer;
  message_ids: string[];
  preview: string | null;
  event_count: number | null;
  dead_letter_count: number;
}

const hashKey = randomBytes(32);

/** A real RegulatedSubjects of the account key above: ids by type, suppressed or deleted up to a cut-off. */
function regulationOf(
  subjects: { type: SubjectType; id: string; suppressed?: boolean; deleteCutoff?: string | null }[],
): RegulatedSubjects {
  return new RegulatedSubjects({
    hashKey: hashKey.toString('base64'),
    subjects: subjects.map((s): RegulatedSubject => ({
      hash: subjectHash(hashKey, s.type, s.id),
      suppressed: s.suppressed ?? true,
      deleteCutoff: s.deleteCutoff ?? null,
    })),
  });
}

const track = (ids: Partial<Pick<TestEvent, 'userId' | 'anonymousId' | 'previousId'>>, n = 0): TestEvent => ({
  type: 'track',
  event: `Clicked ${n}`,
  messageId: randomUUID(),
  ...ids,
  properties: { n, pad: 'é'.repeat(n) },
});

const envelopeOf = (
  accountId: string,
  events: readonly TestEvent[],
  receivedAt = new Date().toISOString(),
) => ({
  v: 2 as const,
  accountId,
  writeKeyId: randomUUID(),
  batchId: randomUUID(),
  receivedAt,
  ip: null,
  userAgent: null,
  events: [...events],
});

describe('dead-letter erasure (real PostgreSQL)', () => {
  let db: MigratedScratchDatabase;
  let index: DeadLetterIndex;
  let accounts: AccountService;
  let offsets = 0;

  beforeAll(async () => {
    db = await createMigratedScratchDatabase('dead-letter erasure');
    index = new DeadLetterIndex(db.dataSource, logger, { maxPerAccount: 100_000 });
    accounts = new AccountService(db.dataSource);
  }, 60_000);

  afterAll(async () => {
    await db?.drop();
  });

  const account = async () => (await accounts.create(`Erasure ${randomUUID()}`)).id;

  /** Indexes a record of `envelope` as the index's consumer hands one over; answers its row id. */
  const indexed = async (
    envelope: ReturnType<typeof envelopeOf>,
    options: { key?: string; into?: DeadLetterIndex } = {},
  ): Promise<{ outcome: IndexOutcome; id: string | undefined }> => {
    const origin = `test.tracking.events.v1/0/${(offsets += 1)}`;
    const outcome = await (options.into ?? index).index('amplitude', {
      topic: 'test.delivery.amplitude.dead-letter.v1',
      partition: 0,
      offset: String(offsets),
      key: Buffer.from(options.key ?? `${envelope.accountId}:${envelope.events[0]?.anonymousId ?? ''}`),
      value: Buffer.from(JSON.stringify(envelope)),
      headers: {
        [deliveryHeaders.target]: 'amplitude-integration',
        [deliveryHeaders.reason]: 'http_400: refused',
        [deliveryHeaders.origin]: origin,
        [deliveryHeaders.permanent]: 'true',
      },
    });
    const [row] = (await db.dataSource.query(
      'SELECT id FROM dead_letters WHERE account_id = $1 AND origin = $2',
      [envelope.accountId, origin],
    )) as { id: string }[];
    return { outcome, id: row?.id };
  };

  const rowsOf = async (accountId: string): Promise<Row[]> =>
    db.dataSource.query(
      `SELECT id, status, record_key, record_value, message_ids, preview, event_count, dead_letter_count
       FROM dead_letters WHERE account_id = $1 ORDER BY id`,
      [accountId],
    );

  /** Every step until the cursor is null; answers the steps. */
  const eraseAll = async (accountId: string, regulation: DeadLetterRegulation, maxRows: number) => {
    const steps: DeadLetterErasure[] = [];
    let after: string | null = null;
    do {
      const step = await eraseFromDeadLetters(db.dataSource, accountId, regulation, { maxRows, after });
      steps.push(step);
      after = step.next;
      if (steps.length > 10_000) throw new Error('the erasure does not converge');
    } while (after !== null);
    return steps;
  };

  it("deletes rows holding only the subject's events, rewrites mixed rows as the indexer would store the rest, and leaves the rest", async () => {
    const a = await account();
    const b = await account();
    const reference = await account();
    const regulation = regulationOf([{ type: 'USER_ID', id: 'user-x' }]);
    const xOnly = envelopeOf(a, [
      track({ userId: 'user-x', anonymousId: 'anon-x' }, 1),
      track({ userId: 'user-x' }, 2),
    ]);
    const kept = [track({ userId: 'user-y', anonymousId: 'anon-y' }, 4), track({ anonymousId: 'anon-z' }, 5)];
    const mixedEvents = [track({ userId: 'user-x', anonymousId: 'anon-x' }, 3), kept[0]!, kept[1]!];
    const mixed = envelopeOf(a, mixedEvents);
    // An alias naming the subject as its previous id, and a discarded letter: both erased.
    const alias = envelopeOf(a, [
      { type: 'alias', messageId: randomUUID(), userId: 'user-new', previousId: 'user-x' },
    ]);
    const other = envelopeOf(a, [track({ userId: 'user-y' }, 6)]);
    const sameIdElsewhere = envelopeOf(b, [track({ userId: 'user-x', anonymousId: 'anon-x' }, 7)]);
    const ids = {
      xOnly: (await indexed(xOnly)).id!,
      mixed: (await indexed(mixed)).id!,
      alias: (await indexed(alias)).id!,
      other: (await indexed(other)).id!,
    };
    await indexed(sameIdElsewhere);
    await db.dataSource.query(
      `UPDATE dead_letters SET status = 'discarded', discarded_at = now() WHERE id = $1`,
      [ids.alias],
    );
    // A poison row (a record that is not an envelope): read, counted, left.
    const poison = (await indexed(envelopeOf(a, [track({ userId: 'user-x' }, 8)]))).id!;
    await db.dataSource.query(
      `UPDATE dead_letters SET record_value = convert_to('{"events":[{"userId":"user-x"}]}', 'UTF8') WHERE id = $1`,
      [poison],
    );
    const before = await rowsOf(a);
    const bBefore = await rowsOf(b);

    const steps = await eraseAll(a, regulation, 100);
    expect(steps).toEqual([{ scanned: 5, rewritten: 1, deleted: 2, next: null }]);

    const after = await rowsOf(a);
    expect(after.map((r) => r.id).sort()).toEqual([ids.mixed, ids.other, poison].sort());
    // The mixed row: what the index stores for an envelope of the kept events (here, indexed
    // into another account), and the record those events make, its key no longer naming x.
    await indexed({ ...mixed, accountId: reference, events: kept });
    const [expected] = await rowsOf(reference);
    const rewritten = after.find((r) => r.id === ids.mixed)!;
    expect([rewritten.preview, rewritten.message_ids, rewritten.event_count]).toEqual([
      expected!.preview,
      expected!.message_ids,
      expected!.event_count,
    ]);
    expect(rewritten.message_ids).toEqual(kept.map((e) => e.messageId));
    expect(rewritten.record_value.equals(Buffer.from(JSON.stringify({ ...mixed, events: kept })))).toBe(true);
    expect(rewritten.record_key?.toString()).toBe(`${a}:anon-y`);
    expect(rewritten.dead_letter_count).toBe(1);
    // The others are byte for byte as they were, and account B's x is B's own (a different regulation).
    for (const id of [ids.other, poison])
      expect(after.find((r) => r.id === id)).toEqual(before.find((r) => r.id === id));
    expect(await rowsOf(b)).toEqual(bBefore);

    // Done: a second pass changes nothing.
    expect(await eraseAll(a, regulation, 100)).toEqual([
      { scanned: 3, rewritten: 0, deleted: 0, next: null },
    ]);
  });

  it("keeps a deleted subject's events received after the cut-off, and an anonymous id's rule covers only that type", async () => {
    const a = await account();
    const cutoff = '2026-11-20T12:00:00.000Z';
    const regulation = regulationOf([
      { type: 'ANONYMOUS_ID', id: 'anon-x', suppressed: false, deleteCutoff: cutoff },
    ]);
    const atCutoff = (await indexed(envelopeOf(a, [track({ anonymousId: 'anon-x' })], cutoff))).id!;
    const later = (
      await indexed(envelopeOf(a, [track({ anonymousId: 'anon-x' })], '2026-11-20T12:00:00.001Z'))
    ).id!;
    const asUser = (await indexed(envelopeOf(a, [track({ userId: 'anon-x' })], cutoff))).id!;
    const steps = await eraseAll(a, regulation, 2);
    expect(steps.reduce((n, s) => n + s.deleted, 0)).toBe(1);
    expect((await rowsOf(a)).map((r) => r.id).sort()).toEqual([later, asUser].sort());
    expect((await rowsOf(a)).map((r) => r.id)).not.toContain(atCutoff);
  });

  it('walks the rows in bounded steps whose cursor converges on a complete scan', async () => {
    const a = await account();
    const regulation = regulationOf([{ type: 'USER_ID', id: 'user-x' }]);
    for (let n = 0; n < 23; n += 1)
      await indexed(
        envelopeOf(
          a,
          n % 3 === 0
            ? [track({ userId: 'user-x' }, n)]
            : [track({ userId: `u${n}` }, n), track({ userId: 'user-x' }, n)],
        ),
      );
    const steps = await eraseAll(a, regulation, 5);
    // 23 rows in steps of 5: five steps, the last one short and with no cursor.
    expect(steps.map((s) => [s.scanned, s.next === null])).toEqual([
      [5, false],
      [5, false],
      [5, false],
      [5, false],
      [3, true],
    ]);
    expect(steps.reduce((n, s) => n + s.deleted, 0)).toBe(8);
    expect(steps.reduce((n, s) => n + s.rewritten, 0)).toBe(15);
    const ids = steps.slice(0, -1).map((s) => s.next!);
    expect([...ids].sort()).toEqual(ids);
    // A page that ends exactly at the last row answers a cursor, and the step after it none.
    const exact = await eraseAll(a, regulation, 15);
    expect(exact.map((s) => [s.scanned, s.rewritten + s.deleted, s.next === null])).toEqual([
      [15, 0, false],
      [0, 0, true],
    ]);
    await expect(
      eraseFromDeadLetters(db.dataSource, a, regulation, { maxRows: 0, after: null }),
    ).rejects.toThrow(RangeError);
  });

  it("waits for a row the indexer is updating, and rewrites the indexer's version of it", async () => {
    const a = await account();
    const regulation = regulationOf([{ type: 'USER_ID', id: 'user-x' }]);
    const first = envelopeOf(a, [track({ userId: 'user-x' }, 1), track({ userId: 'user-y' }, 2)]);
    const id = (await indexed(first)).id!;
    // The same record dead-lettered again with one more event, as the indexer's upsert writes
    // it: in a transaction that holds the row while the erasure step starts.
    const again = { ...first, events: [...first.events, track({ userId: 'user-z' }, 3)] };
    // The test's events are a subset of TrackingEvent's fields, as a tenant's may be.
    const stored = storedEventsOf(again as unknown as OutboxEnvelope, Buffer.from(JSON.stringify(again)));
    const runner = db.dataSource.createQueryRunner();
    await runner.connect();
    await runner.startTransaction();
    let step: Promise<DeadLetterErasure> | undefined;
    try {
      await runner.query('SELECT id FROM dead_letters WHERE id = $1 FOR UPDATE', [id]);
      step = eraseFromDeadLetters(db.dataSource, a, regulation, { maxRows: 10, after: null });
      await waitUntil('the erasure step to wait for the row', async () => {
        const [waiting] = (await db.dataSource.query(
          `SELECT count(*)::int AS n FROM pg_stat_activity
           WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%dead_letters%'`,
        )) as { n: number }[];
        return waiting!.n > 0;
      });
      await runner.query(
        `UPDATE dead_letters SET dead_letter_count = dead_letter_count + 1, record_value = $2, message_ids = $3,
           preview = $4, event_count = $5 WHERE id = $1`,
        [id, stored.recordValue, stored.messageIds, stored.preview, stored.eventCount],
      );
      await runner.commitTransaction();
    } finally {
      await runner.release();
    }
    expect(await step).toMatchObject({ scanned: 1, rewritten: 1, deleted: 0 });
    const [row] = await rowsOf(a);
    expect(row!.dead_letter_count).toBe(2);
    expect(row!.message_ids).toEqual([again.events[1]!.messageId, again.events[2]!.messageId]);
    expect(JSON.parse(row!.record_value.toString()).events).toEqual(again.events.slice(1));
  });

  it('a regulated indexer stores no event the regulation decides, and indexes nothing while the lookup fails', async () => {
    const a = await account();
    const regulation = regulationOf([{ type: 'USER_ID', id: 'user-x' }]);
    let failing = true;
    const regulated = new DeadLetterIndex(
      db.dataSource,
      logger,
      { maxPerAccount: 100 },
      async (accountId) => {
        if (failing) throw new Error('control plane away');
        return accountId === a ? regulation : regulationOf([]);
      },
    );
    const xOnly = envelopeOf(a, [track({ userId: 'user-x', anonymousId: 'anon-x' })]);
    await expect(indexed(xOnly, { into: regulated })).rejects.toThrow('control plane away');
    expect(await rowsOf(a)).toEqual([]);
    failing = false;
    expect(await indexed(xOnly, { into: regulated })).toEqual({ outcome: 'regulated', id: undefined });
    const keptEvent = track({ userId: 'user-y', anonymousId: 'anon-y' });
    const mixed = envelopeOf(a, [track({ userId: 'user-x', anonymousId: 'anon-x' }), keptEvent]);
    const { outcome } = await indexed(mixed, { into: regulated });
    expect(outcome).toBe('inserted');
    const [row] = await rowsOf(a);
    expect(row!.message_ids).toEqual([keptEvent.messageId]);
    expect(row!.record_value.equals(Buffer.from(JSON.stringify({ ...mixed, events: [keptEvent] })))).toBe(
      true,
    );
    expect(row!.record_key?.toString()).toBe(`${a}:anon-y`);
    expect([row!.preview, row!.event_count]).toEqual([JSON.stringify([keptEvent]), 1]);
  });

  it('property: after erasure no stored event is decided, and every other event is stored exactly once', async () => {
    const a = await account();
    const b = await account();
    // Ids of any Unicode (NUL included: the record is JSON in a bytea); message ids are text[]
    // in PostgreSQL, which holds no NUL, so they are unique strings without it.
    const anyId = fc.string({ unit: 'binary', minLength: 1, maxLength: 12 });
    const messageIdOf = anyId.filter((id) => !id.includes('\u0000'));
    const subjects = fc.uniqueArray(anyId, { minLength: 1, maxLength: 3 });
    await fc.assert(
      fc.asyncProperty(
        subjects,
        fc.array(
          fc.array(
            fc.record({
              subject: fc.nat(5),
              asAnonymous: fc.boolean(),
              other: anyId,
              messageId: messageIdOf,
            }),
            { minLength: 1, maxLength: 6 },
          ),
          {
            minLength: 1,
            maxLength: 8,
          },
        ),
        fc.integer({ min: 1, max: 5 }),
        async (subjectIds, records, maxRows) => {
          await db.dataSource.query('DELETE FROM dead_letters WHERE account_id = ANY($1::uuid[])', [[a, b]]);
          const regulation = regulationOf(subjectIds.map((id) => ({ type: 'USER_ID' as const, id })));
          let n = 0;
          const envelopes = records.map((events) =>
            envelopeOf(
              a,
              events.map(({ subject, asAnonymous, other, messageId }) => {
                // Some events are a subject's (by user id); the others carry any id, the
                // subject's own as an anonymous id included (a different type: kept).
                const id = subjectIds[subject] ?? other;
                const ids = asAnonymous ? { anonymousId: id } : { userId: id };
                return { type: 'track', messageId: `${(n += 1)}:${messageId}`, ...ids };
              }),
            ),
          );
          for (const envelope of envelopes) {
            expect((await indexed(envelope)).outcome).toBe('inserted');
            await indexed({ ...envelope, accountId: b });
          }
          const bBefore = await rowsOf(b);
          await eraseAll(a, regulation, maxRows);
          const expected = envelopes.flatMap((e) =>
            e.events
              .filter((event) => regulation.decide(event, Date.parse(e.receivedAt)) === null)
              .map((event) => event.messageId),
          );
          const rows = await rowsOf(a);
          const stored = rows.flatMap((row) => {
            const envelope = JSON.parse(row.record_value.toString()) as ReturnType<typeof envelopeOf>;
            for (const event of envelope.events)
              expect(regulation.decide(event, Date.parse(envelope.receivedAt))).toBeNull();
            expect(row.message_ids).toEqual(envelope.events.map((event) => event.messageId));
            expect(row.event_count).toBe(envelope.events.length);
            return row.message_ids;
          });
          expect([...stored].sort()).toEqual([...expected].sort());
          expect(await rowsOf(b)).toEqual(bBefore);
        },
      ),
      { numRuns: 30 },
    );
  }, 120_000);
});

describe('the dead-letter indexer with regulations (real Kafka and PostgreSQL)', () => {
  const prefix = `test.${randomUUID()}.`;
  const kafka = createKafka(loadConfig(kafkaConfigSchema, process.env), {
    clientId: 'dead-letter-erasure-test',
    logger,
  });
  let db: MigratedScratchDatabase;
  let indexer: DeadLetterIndexer | undefined;

  beforeAll(async () => {
    db = await createMigratedScratchDatabase('dead-letter indexer regulations');
  }, 60_000);

  afterAll(async () => {
    await indexer?.stop();
    await db?.drop();
  });

  it('does not commit a record whose regulation lookup fails, reads it again, and stores only its undecided events', async () => {
    const a = (await new AccountService(db.dataSource).create('Indexer regulations')).id;
    const regulation = regulationOf([{ type: 'USER_ID', id: 'user-x' }]);
    let lookups = 0;
    const outcomes: IndexOutcome[] = [];
    const topics = deliveryTopicsFor('amplitude', prefix);
    await ensureTopics(kafka, [topics.deadLetter], { replicationFactor: 1, logger });
    indexer = new DeadLetterIndexer({
      kafka,
      dataSource: db.dataSource,
      logger,
      kinds: ['amplitude'],
      topicPrefix: prefix,
      replicationFactor: 1,
      onIndexed: (outcome) => outcomes.push(outcome),
      // The first two lookups fail (the regulation service away): the batch is read again.
      regulationOf: async () => {
        lookups += 1;
        if (lookups <= 2) throw new Error('regulated subjects unavailable');
        return regulation;
      },
    });
    indexer.start();
    const keptEvent = track({ userId: 'user-y', anonymousId: 'anon-y' });
    const producer = createProducer(kafka);
    await producer.connect();
    try {
      await producer.send({
        topic: topics.deadLetter.topic,
        acks: -1,
        messages: [
          envelopeOf(a, [track({ userId: 'user-x' })]),
          envelopeOf(a, [track({ userId: 'user-x' }), keptEvent]),
        ].map((envelope, n) => ({
          key: `${a}:`,
          value: JSON.stringify(envelope),
          headers: {
            [deliveryHeaders.target]: 'amp',
            [deliveryHeaders.origin]: `${prefix}tracking.events.v1/0/${n}`,
          },
        })),
      });
    } finally {
      await producer.disconnect();
    }
    await waitUntil('the indexer to index both records', async () => outcomes.length >= 2, 60_000);
    expect(lookups).toBeGreaterThanOrEqual(4);
    expect(outcomes).toEqual(['regulated', 'inserted']);
    const rows: { message_ids: string[] }[] = await db.dataSource.query(
      'SELECT message_ids FROM dead_letters WHERE account_id = $1',
      [a],
    );
    expect(rows).toEqual([{ message_ids: [keptEvent.messageId] }]);
  }, 90_000);
});
