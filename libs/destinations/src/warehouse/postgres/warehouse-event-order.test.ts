import fc from 'fast-check';
import { Client } from 'pg';
import { parseJsonText, normalizeEvent, validateEvent, type WarehouseRow } from '@pipeline/events';
import { createScratchDatabase, DEFAULT_DATABASE_URL, type ScratchDatabase } from '@pipeline/postgres';
import { eventOrderOf } from '../event-order';
import { warehouseMigrations } from './warehouse-ddl';
import { mergeById } from '../warehouse-row-batches';
import { WarehouseWriter } from './warehouse-writer';

// Users and groups never roll back: whatever order events arrive in (dead-letter replays, late
// mobile queues, offset resets), and however they are split into batches, the stored row is
// the newest event's, with each trait from the newest event that has it.

const receipt = (receivedAt: string) => ({
  receivedAt: new Date(receivedAt),
  ip: '198.51.100.1',
  userAgent: 'UA',
});

function identify(event: object, receivedAt = '2026-06-03T00:00:00.000Z'): WarehouseRow {
  const result = validateEvent({ type: 'identify', anonymousId: 'anon', ...event });
  if (!result.valid) throw new Error(JSON.stringify(result.errors));
  return normalizeEvent(result.event, receipt(receivedAt));
}

/** PostgreSQL refuses NUL in text and jsonb (22021, 22P05): such rows are dead-lettered, not merged. */
const noNul = (text: string) => !text.includes('\u0000');
const unicode = (maxLength: number) => fc.string({ unit: 'binary', maxLength }).filter(noNul);

/** Edge instants, and few of them, so that equal timestamps (ties) are frequent. */
const instant = fc.oneof(
  fc.constantFrom(
    '0001-01-01T00:00:00.000Z',
    '1969-12-31T23:59:59.999Z',
    '1970-01-01T00:00:00.000Z',
    '2026-06-01T00:00:00.000Z',
    '2026-06-01T00:00:00.001Z',
    '9999-12-31T23:59:59.999Z',
  ),
  fc
    .date({
      min: new Date('0001-01-01T00:00:00.000Z'),
      max: new Date('9999-12-31T23:59:59.999Z'),
      noInvalidDate: true,
    })
    .map((d) => d.toISOString()),
);

const traitValue: fc.Arbitrary<unknown> = fc.oneof(
  unicode(8),
  fc.integer(),
  fc.boolean(),
  fc.constant(null),
  fc.dictionary(unicode(3), unicode(3), { maxKeys: 2 }),
);
/** A few keys in common (so events overlap), and any others. */
const traitKey = fc.oneof(fc.constantFrom('plan', 'x', '名前', '😀', '__proto__', 'é'), unicode(4));
const traits = fc.dictionary(traitKey, traitValue, { maxKeys: 4 });

/** Message ids: distinct, and with characters on both sides of the surrogates (U+E000.., U+10000..). */
const messageId = fc.oneof(
  unicode(6).filter((s) => s.length > 0),
  fc.constantFrom('\uE000', '\uFFFF', '\u{10000}', '\u{1F600}', 'a', 'b'),
);

interface Event {
  table: 'users' | 'groups';
  row: Record<string, unknown>;
}

const events: fc.Arbitrary<Event[]> = fc
  .uniqueArray(
    fc.record({
      table: fc.constantFrom<'users' | 'groups'>('users', 'groups'),
      id: fc.constantFrom('a', 'b', 'c'),
      messageId,
      timestamp: fc.option(instant, { freq: 5 }),
      receivedAt: fc.constantFrom('2026-06-01T00:00:00.000Z', '2026-06-02T00:00:00.000Z'),
      ip: unicode(4),
      traits: fc.option(traits, { freq: 8 }),
    }),
    { selector: (e) => e.messageId, minLength: 1, maxLength: 14 },
  )
  .map((list) =>
    list.map((e) => ({
      table: e.table,
      row: {
        message_id: e.messageId,
        anonymous_id: `anon-${e.messageId}`,
        user_id: e.table === 'users' ? e.id : `member-${e.messageId}`,
        ...(e.table === 'groups' ? { group_id: e.id } : {}),
        timestamp: e.timestamp,
        received_at: e.receivedAt,
        context_ip: e.ip,
        context_extra: { from: e.messageId },
        traits: e.traits,
      },
    })),
  );

/**
 * A load: the events in some order, cut into batches; `again` picks, for each batch, events of
 * the batches before it that come again with it (a consumer killed after it wrote and before
 * it committed its offsets gets them again, folded with events it never wrote).
 */
const load = (list: Event[]) =>
  fc.record({
    order: fc.shuffledSubarray(list, { minLength: list.length, maxLength: list.length }),
    cuts: fc.array(fc.integer({ min: 1, max: 4 }), { maxLength: list.length }),
    again: fc.array(fc.array(fc.nat(), { maxLength: 3 }), { maxLength: list.length }),
  });

/** The batches of a load, each with the earlier events `again` names for it in front. */
function batchesOf(chosen: { order: Event[]; cuts: number[]; again: number[][] }): Event[][] {
  const plain = batches(chosen.order, chosen.cuts);
  return plain.map((batch, n) => {
    const before = plain.slice(0, n).flat();
    const repeated =
      before.length === 0 ? [] : (chosen.again[n] ?? []).map((i) => before[i % before.length]!);
    return [...repeated, ...batch];
  });
}

function batches<T>(list: readonly T[], cuts: readonly number[]): T[][] {
  const out: T[][] = [];
  let at = 0;
  for (const cut of cuts) {
    if (at >= list.length) break;
    out.push(list.slice(at, at + cut));
    at += cut;
  }
  if (at < list.length) out.push(list.slice(at));
  return out;
}

describe('users and groups keep their newest values (real PostgreSQL)', () => {
  let db: ScratchDatabase;
  let client: Client;
  let writer: WarehouseWriter;
  let schemas = 0;
  const freshSchema = () => `acct_order_${(schemas += 1)}`;

  beforeAll(async () => {
    db = await createScratchDatabase(process.env.DATABASE_URL || DEFAULT_DATABASE_URL, 'event order');
    client = new Client({ connectionString: db.url });
    await client.connect();
    // Two rows per COPY: a batch's folded users also span several loads.
    writer = new WarehouseWriter(db.url, { rowsPerCopy: 2 });
  });
  afterAll(async () => {
    await writer.close();
    await client.end();
    await db.drop();
  });

  /** Every column of every row of the table, as PostgreSQL's own JSON of it. */
  const rowsOf = async (schema: string, table: 'users' | 'groups') =>
    (
      await client.query<{ row: string }>(
        `SELECT (to_jsonb(t))::text AS row FROM ${schema}.${table} t ORDER BY ${table === 'users' ? 'user_id' : 'group_id'}`,
      )
    ).rows.map((r) => r.row);

  it('the newer identify stays when an older one arrives later; the older fills only missing traits', async () => {
    const schema = freshSchema();
    const newer = identify({
      messageId: 'm-newer',
      userId: 'u1',
      timestamp: '2026-06-02T00:00:00.000Z',
      traits: { plan: 'pro' },
    });
    const older = identify({
      messageId: 'm-older',
      userId: 'u1',
      timestamp: '2026-06-01T00:00:00.000Z',
      context: { ip: '203.0.113.9' },
      traits: { plan: 'free', company: 'Acme' },
    });
    expect(await writer.write(schema, [newer])).toEqual({ written: 1, duplicates: 0 });
    expect(await writer.write(schema, [older])).toEqual({ written: 1, duplicates: 0 });
    const { rows } = await client.query(
      `SELECT message_id, timestamp, traits, _event_order, _trait_orders FROM ${schema}.users`,
    );
    expect(rows).toEqual([
      {
        message_id: 'm-newer',
        timestamp: new Date('2026-06-02T00:00:00.000Z'),
        traits: { plan: 'pro', company: 'Acme' },
        _event_order: eventOrderOf(newer.row),
        _trait_orders: { plan: eventOrderOf(newer.row), company: eventOrderOf(older.row) },
      },
    ]);
    // The older one again, and one with nothing the row lacks: nothing changes.
    const before = await rowsOf(schema, 'users');
    const stale = identify({
      messageId: 'm-stale',
      userId: 'u1',
      timestamp: '2026-05-01T00:00:00.000Z',
      traits: { plan: 'trial', company: 'Old' },
    });
    expect(await writer.write(schema, [older, stale])).toEqual({ written: 0, duplicates: 2 });
    expect(await writer.write(schema, [newer])).toEqual({ written: 0, duplicates: 1 });
    expect(await rowsOf(schema, 'users')).toEqual(before);
  });

  it("a trait of an event delivered again beside the row's own event still wins", async () => {
    // A consumer killed after it wrote one batch and before it committed: the next batch holds
    // that batch's newest identify again, folded with one it never wrote.
    const schema = freshSchema();
    const newest = identify({
      messageId: 'm-newest',
      userId: 'u1',
      timestamp: '2026-06-03T00:00:00.000Z',
      traits: { plan: 'pro' },
    });
    const oldest = identify({
      messageId: 'm-oldest',
      userId: 'u1',
      timestamp: '2026-06-01T00:00:00.000Z',
      traits: { company: 'Old' },
    });
    const middle = identify({
      messageId: 'm-middle',
      userId: 'u1',
      timestamp: '2026-06-02T00:00:00.000Z',
      traits: { company: 'Acme' },
    });
    await writer.write(schema, [newest, oldest]);
    await writer.write(schema, [newest, middle]);
    const { rows } = await client.query(`SELECT message_id, traits, _trait_orders FROM ${schema}.users`);
    expect(rows).toEqual([
      {
        message_id: 'm-newest',
        traits: { plan: 'pro', company: 'Acme' },
        _trait_orders: { plan: eventOrderOf(newest.row), company: eventOrderOf(middle.row) },
      },
    ]);
    // The row's own event retried by its client (a later received_at) changes nothing.
    const before = await rowsOf(schema, 'users');
    const retried = identify(
      {
        messageId: 'm-newest',
        userId: 'u1',
        timestamp: '2026-06-03T00:00:00.000Z',
        traits: { plan: 'enterprise', company: 'Retry' },
      },
      '2026-06-09T00:00:00.000Z',
    );
    await writer.write(schema, [retried]);
    expect(await rowsOf(schema, 'users')).toEqual(before);
  });

  it('equal timestamps: the later received_at wins, then the greater message id', async () => {
    const schema = freshSchema();
    const at = '2026-06-01T00:00:00.000Z';
    const early = identify({ messageId: 'm-z', userId: 'u', timestamp: at, traits: { k: 'early' } }, at);
    const late = identify(
      { messageId: 'm-a', userId: 'u', timestamp: at, traits: { k: 'late' } },
      '2026-06-01T00:00:01.000Z',
    );
    const lateBigger = identify(
      { messageId: 'm-b', userId: 'u', timestamp: at, traits: { k: 'late, bigger id' } },
      '2026-06-01T00:00:01.000Z',
    );
    await writer.write(schema, [lateBigger]);
    await writer.write(schema, [late, early]);
    const { rows } = await client.query(`SELECT message_id, traits FROM ${schema}.users`);
    expect(rows).toEqual([{ message_id: 'm-b', traits: { k: 'late, bigger id' } }]);
  });

  it('a row stored before orders were kept counts as its own event’s: an older event does not roll it back', async () => {
    const schema = freshSchema();
    await client.query(`CREATE SCHEMA ${schema}`);
    await client.query(
      `CREATE TABLE ${schema}._migrations (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`,
    );
    for (const statement of warehouseMigrations[0]!.statements(schema)) await client.query(statement);
    await client.query(`INSERT INTO ${schema}._migrations (version) VALUES (1)`);
    await client.query(
      `INSERT INTO ${schema}.users (message_id, user_id, timestamp, received_at, traits)
       VALUES ('m-legacy', 'u1', '2026-06-02T00:00:00Z', '2026-06-02T00:00:00Z', '{"plan": "pro"}')`,
    );
    const older = identify({
      messageId: 'm-older',
      userId: 'u1',
      timestamp: '2026-06-01T00:00:00.000Z',
      traits: { plan: 'free', seats: 3 },
    });
    expect(await writer.write(schema, [older])).toEqual({ written: 1, duplicates: 0 });
    const legacyOrder = eventOrderOf({
      message_id: 'm-legacy',
      timestamp: '2026-06-02T00:00:00.000Z',
      received_at: '2026-06-02T00:00:00.000Z',
    });
    const { rows } = await client.query(
      `SELECT message_id, traits, _event_order, _trait_orders FROM ${schema}.users`,
    );
    expect(rows).toEqual([
      {
        message_id: 'm-legacy',
        traits: { plan: 'pro', seats: 3 },
        _event_order: legacyOrder,
        _trait_orders: { plan: legacyOrder, seats: eventOrderOf(older.row) },
      },
    ]);
    const newer = identify({
      messageId: 'm-newer',
      userId: 'u1',
      timestamp: '2026-06-03T00:00:00.000Z',
      traits: { plan: 'enterprise' },
    });
    expect(await writer.write(schema, [newer])).toEqual({ written: 1, duplicates: 0 });
    expect((await client.query(`SELECT message_id, traits FROM ${schema}.users`)).rows).toEqual([
      { message_id: 'm-newer', traits: { plan: 'enterprise', seats: 3 } },
    ]);
  });

  it('the same identifies and group calls in any order, batch split and redelivery give the same rows, every column', async () => {
    const [a, b] = [freshSchema(), freshSchema()];
    await Promise.all([writer.ensureSchema(a), writer.ensureSchema(b)]);
    await fc.assert(
      fc.asyncProperty(
        events.chain((list) => fc.tuple(fc.constant(list), load(list), load(list))),
        async ([list, first, second]) => {
          // Emptied, the two schemas are as fresh as new ones, without migrating two per run.
          await client.query(`TRUNCATE ${a}.users, ${a}.groups, ${b}.users, ${b}.groups`);
          for (const batch of batches(first.order, first.cuts))
            await writer.write(a, batch as WarehouseRow[]);
          // The second load gets events again beside new ones, as after a crash.
          for (const batch of batchesOf(second)) await writer.write(b, batch as WarehouseRow[]);
          for (const table of ['users', 'groups'] as const) {
            const rowsA = await rowsOf(a, table);
            expect(rowsA).toEqual(await rowsOf(b, table));
            // And it is the newest event's row with each trait from the newest event that has it.
            const key = table === 'users' ? 'user_id' : 'group_id';
            const expected = mergeById(
              list.filter((e) => e.table === table).map((e) => e.row),
              key,
            ).sort((x, y) => String(x[key]).localeCompare(String(y[key])));
            const stored = rowsA.map((text) => parseJsonText(text) as Record<string, unknown>);
            expect(
              stored.map((r) => [r[key], r.message_id, r.traits, r._event_order, r._trait_orders]),
            ).toEqual(expected.map((r) => [r[key], r.message_id, r.traits, r._event_order, r._trait_orders]));
          }
          // Everything again, in one batch: a redelivery changes nothing.
          expect(await writer.write(a, list as WarehouseRow[])).toEqual({
            written: 0,
            duplicates: list.length,
          });
        },
      ),
      // A failure is reported as found: shrinking through PostgreSQL outlasts the time limit.
      { numRuns: 80, endOnFailure: true },
    );
  }, 120_000);
});
