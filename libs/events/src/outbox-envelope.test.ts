import type { TrackingEvent } from './event-schema';
import {
  envelopeWith,
  MAX_ENVELOPE_BYTES,
  outboxKey,
  parseOutboxEnvelope,
  receiptContextOf,
  toOutboxEnvelopes,
  type OutboxEnvelope,
  type PlanVerdict,
} from './outbox-envelope';

const base = {
  v: 2 as const,
  accountId: '0b6c-acc',
  writeKeyId: 'wk-1',
  batchId: 'b-1',
  receivedAt: '2026-03-01T12:00:00.000Z',
  ip: '203.0.113.9',
  userAgent: 'UA',
};
const track = (
  messageId: string,
  who: { anonymousId?: string; userId?: string },
  pad = 0,
): TrackingEvent => ({
  type: 'track',
  event: 'e',
  messageId,
  timestamp: base.receivedAt,
  ...who,
  properties: { pad: 'x'.repeat(pad) },
});
const json = (value: unknown) => Buffer.from(JSON.stringify(value));

describe('outboxKey', () => {
  it('keys by the first event’s anonymous id, else its user id, else the account alone', () => {
    const envelope = (events: TrackingEvent[]): OutboxEnvelope => ({ ...base, events });
    expect(outboxKey(envelope([track('m1', { anonymousId: 'a1', userId: 'u1' })]))).toBe('0b6c-acc:a1');
    expect(outboxKey(envelope([track('m1', { userId: 'u1' }), track('m2', { anonymousId: 'a2' })]))).toBe(
      '0b6c-acc:u1',
    );
    expect(outboxKey(envelope([]))).toBe('0b6c-acc:');
  });
});

describe('toOutboxEnvelopes', () => {
  it('makes no record of no events, whether or not the body was measured', () => {
    expect(toOutboxEnvelopes(base, [], 10)).toEqual([]);
    expect(toOutboxEnvelopes(base, [])).toEqual([]);
  });

  it('serializes each record as its envelope', () => {
    const [only] = toOutboxEnvelopes(base, [track('m1', { anonymousId: 'a' })]);
    expect(JSON.parse(only!.json)).toEqual(only!.envelope);
    expect(only!.envelope).toEqual({ ...base, events: [track('m1', { anonymousId: 'a' })] });
  });

  it('starts a new record only when the next event would pass the limit less 1 KB', () => {
    const event = track('m0', { anonymousId: 'a' });
    const overhead = Buffer.byteLength(JSON.stringify(event));
    // Two events that fill the budget exactly stay together; one byte more splits them.
    const half = (MAX_ENVELOPE_BYTES - 1024) / 2 - overhead;
    const fits = [track('m1', { anonymousId: 'a' }, half), track('m2', { anonymousId: 'a' }, half)];
    expect(toOutboxEnvelopes(base, fits).map((r) => r.envelope.events.length)).toEqual([2]);
    const over = [track('m1', { anonymousId: 'a' }, half), track('m2', { anonymousId: 'a' }, half + 1)];
    expect(toOutboxEnvelopes(base, over).map((r) => r.envelope.events.length)).toEqual([1, 1]);
  });
});

describe('toOutboxEnvelopes with verdicts', () => {
  const plan = { planId: 'p-1', version: 3, policy: { actions: { unplanned_event: 'quarantine' as const } } };
  const withPlan = { ...base, plan };
  const clean: PlanVerdict = { version: 3, violations: [] };
  const flagged = (index: number, pad = 0): PlanVerdict => ({
    version: 3,
    violations: [
      {
        code: 'missing_required',
        path: `/properties/order_id${'x'.repeat(pad)}`,
        keyword: 'required',
        message: `event ${index}`,
        ruleVersion: 1,
      },
    ],
  });

  it('puts the verdicts of a small body in its one record, aligned with the events', () => {
    const events = [track('m1', { anonymousId: 'a' }), track('m2', { anonymousId: 'a' })];
    const records = toOutboxEnvelopes(withPlan, events, 500, [clean, flagged(1)]);
    expect(records).toHaveLength(1);
    expect(JSON.parse(records[0]!.json)).toEqual({ ...withPlan, events, verdicts: [clean, flagged(1)] });
  });

  it('refuses verdicts that are not one per event', () => {
    expect(() => toOutboxEnvelopes(withPlan, [track('m1', { anonymousId: 'a' })], 10, [])).toThrow(
      '0 verdicts for 1 events',
    );
  });

  it('splits a body over 256 KB with each verdict in its event’s record, every record within the limit', () => {
    // 40 events of 30 KB, every third with a 20 KB violation: about 1.4 MB in all.
    const events = Array.from({ length: 40 }, (_, i) => track(`m${i}`, { anonymousId: 'a' }, 30_000));
    const verdicts = events.map((_, i) => (i % 3 === 0 ? flagged(i, 20_000) : clean));
    const sourceBytes = events.reduce((sum, e) => sum + JSON.stringify(e).length, 0);
    expect(sourceBytes).toBeGreaterThan(MAX_ENVELOPE_BYTES / 2);
    const records = toOutboxEnvelopes(withPlan, events, sourceBytes, verdicts);
    expect(records.length).toBeGreaterThan(2);
    for (const { envelope, json } of records) {
      expect(Buffer.byteLength(json)).toBeLessThanOrEqual(MAX_ENVELOPE_BYTES);
      expect(envelope.plan).toEqual(plan);
      expect(envelope.verdicts).toHaveLength(envelope.events.length);
      envelope.events.forEach((event, k) => {
        const index = Number(event.messageId.slice(1));
        expect(envelope.verdicts![k]).toEqual(verdicts[index]);
      });
    }
    expect(records.flatMap((r) => r.envelope.events)).toEqual(events);
    expect(records.flatMap((r) => r.envelope.verdicts)).toEqual(verdicts);
  });

  it('counts a verdict’s bytes with its event’s: what fits without one splits with it', () => {
    const event = track('m0', { anonymousId: 'a' });
    const overhead = Buffer.byteLength(JSON.stringify(event));
    // The plan's bound: its policy's bytes, 6 a unit of its id, 64 for the rest.
    const planBytes = Buffer.byteLength(JSON.stringify(plan.policy)) + 6 * plan.planId.length + 64;
    expect(planBytes).toBeGreaterThanOrEqual(Buffer.byteLength(JSON.stringify(plan)));
    const half = (MAX_ENVELOPE_BYTES - 1024 - planBytes) / 2 - overhead - 40;
    const events = [track('m1', { anonymousId: 'a' }, half), track('m2', { anonymousId: 'a' }, half)];
    const sizes = (verdicts: PlanVerdict[]) =>
      toOutboxEnvelopes(withPlan, events, Infinity, verdicts).map((r) => r.envelope.events.length);
    // Two clean verdicts (40 bytes each, counted without serializing) fill the budget exactly.
    expect(sizes([clean, clean])).toEqual([2]);
    // A verdict with a violation counts more than 40 bytes: the same events no longer share a record.
    expect(sizes([clean, flagged(1)])).toEqual([1, 1]);
    // Its bound is never less than its JSON, whatever its characters (6 bytes a unit at most).
    for (const text of ['\u0000\u001f', '"\\', '\ud800', '😀', 'é', 'x'.repeat(50)]) {
      const verdict: PlanVerdict = {
        version: 2147483647,
        violations: [
          {
            code: 'value_not_allowed',
            path: `/${text}`,
            keyword: text,
            message: text,
            ruleVersion: 2147483647,
          },
        ],
        unlisted: 2147483647,
      };
      const [one] = toOutboxEnvelopes(withPlan, [events[0]!], Infinity, [verdict]);
      const alone = toOutboxEnvelopes(withPlan, [events[0]!], Infinity, [clean]);
      expect(Buffer.byteLength(one!.json) - Buffer.byteLength(alone[0]!.json)).toBeLessThanOrEqual(
        60 + 100 + 6 * (verdict.violations[0]!.code.length + 3 * text.length + 1) - 40,
      );
    }
  });

  it('measures the verdicts of a body within 256 KB, and splits when they take it over', () => {
    // 8 events of 30 KB (245 KB of body) whose verdicts carry 40 KB each: 565 KB in all.
    const events = Array.from({ length: 8 }, (_, i) => track(`m${i}`, { anonymousId: 'a' }, 30_000));
    const sourceBytes = events.reduce((sum, e) => sum + JSON.stringify(e).length, 0);
    expect(sourceBytes).toBeLessThanOrEqual(MAX_ENVELOPE_BYTES / 2);
    const records = toOutboxEnvelopes(
      withPlan,
      events,
      sourceBytes,
      events.map((_, i) => flagged(i, 40_000)),
    );
    expect(records.length).toBeGreaterThanOrEqual(2);
    expect(records.flatMap((r) => r.envelope.events)).toEqual(events);
    for (const { json } of records) expect(Buffer.byteLength(json)).toBeLessThanOrEqual(MAX_ENVELOPE_BYTES);
  });
});

describe('receiptContextOf', () => {
  it('carries the receipt facts, and the batch sentAt only when there is one', () => {
    expect(receiptContextOf(base)).toEqual({
      receivedAt: new Date('2026-03-01T12:00:00.000Z'),
      ip: '203.0.113.9',
      userAgent: 'UA',
    });
    expect(receiptContextOf({ ...base, batchSentAt: '2026-03-01T11:59:00.000Z' })).toEqual({
      receivedAt: new Date('2026-03-01T12:00:00.000Z'),
      ip: '203.0.113.9',
      userAgent: 'UA',
      batchSentAt: '2026-03-01T11:59:00.000Z',
    });
    expect(Object.keys(receiptContextOf({ ...base, batchSentAt: '' }))).toEqual([
      'receivedAt',
      'ip',
      'userAgent',
    ]);
  });
});

describe('parseOutboxEnvelope', () => {
  const valid = { ...base, events: [] };

  it('returns a valid envelope as it was written', () => {
    expect(parseOutboxEnvelope(json(valid))).toEqual(valid);
  });

  it.each([
    ['JSON null', null],
    ['an array', []],
    ['version 1', { ...valid, v: 1 }],
    ['no account id', { ...valid, accountId: undefined }],
    ['an account id that is a number', { ...valid, accountId: 7 }],
    ['an account id unfit for a schema name', { ...valid, accountId: 'acc; drop' }],
    ['an empty account id', { ...valid, accountId: '' }],
    ['an account id of 41 characters', { ...valid, accountId: 'a'.repeat(41) }],
    ['a write key id that is a number', { ...valid, writeKeyId: 1 }],
    ['a receivedAt that is not a string', { ...valid, receivedAt: 1 }],
    ['a receivedAt that is not a date', { ...valid, receivedAt: 'soon' }],
    ['events that are not a list', { ...valid, events: {} }],
  ])('refuses %s', (_name, value) => {
    expect(parseOutboxEnvelope(json(value))).toBeNull();
  });

  it('takes an account id of 40 characters', () => {
    expect(parseOutboxEnvelope(json({ ...valid, accountId: 'A-'.repeat(20) }))).toEqual({
      ...valid,
      accountId: 'A-'.repeat(20),
    });
  });
});

describe('plan verdicts', () => {
  const violation = {
    code: 'missing_required' as const,
    path: '/properties/id',
    keyword: 'required',
    message: 'm',
  };
  const planned: OutboxEnvelope = {
    ...base,
    events: [
      track('m0', { anonymousId: 'a' }),
      track('m1', { anonymousId: 'a' }),
      track('m2', { anonymousId: 'a' }),
    ],
    plan: { planId: 'p-1', version: 2, policy: { actions: { missing_required: 'quarantine' } } },
    verdicts: [
      { version: 2, violations: [] },
      { version: 1, violations: [violation] },
      { version: null, violations: [] },
    ],
  };
  const parsed = (value: unknown) => parseOutboxEnvelope(Buffer.from(JSON.stringify(value)));

  it('keeps each verdict beside its event when some events are kept', () => {
    const part = envelopeWith(planned, [1, 2]);
    expect(part.events.map((e) => e.messageId)).toEqual(['m1', 'm2']);
    expect(part.verdicts).toEqual([
      { version: 1, violations: [violation] },
      { version: null, violations: [] },
    ]);
    expect(part.plan).toEqual(planned.plan);
    expect(parsed(part)).toEqual(part);
    const plain = envelopeWith({ ...base, events: planned.events }, [2]);
    expect(plain).toEqual({ ...base, events: [planned.events[2]] });
    expect('verdicts' in plain).toBe(false);
  });

  it('reads an envelope whose plan fields agree', () => {
    expect(parsed(planned)).toEqual(planned);
  });

  it.each([
    ['verdicts without a plan', { verdicts: planned.verdicts, plan: undefined }],
    ['a plan without verdicts', { verdicts: undefined }],
    ['one verdict short', { verdicts: planned.verdicts?.slice(1) }],
    ['a verdict that is not an object', { verdicts: [null, ...(planned.verdicts ?? []).slice(1)] }],
    [
      'a fractional version',
      { verdicts: [{ version: 1.5, violations: [] }, ...(planned.verdicts ?? []).slice(1)] },
    ],
    [
      'violations that are not a list',
      { verdicts: [{ version: 1, violations: {} }, ...(planned.verdicts ?? []).slice(1)] },
    ],
    ['a plan without an id', { plan: { version: 2, policy: { actions: {} } } }],
    ['a plan without a policy', { plan: { planId: 'p', version: 2 } }],
    ['a policy without actions', { plan: { planId: 'p', version: 2, policy: {} } }],
  ])('refuses %s: a verdict out of place would act on another event', (_, change) => {
    expect(parsed({ ...planned, ...change })).toBeNull();
  });
});
