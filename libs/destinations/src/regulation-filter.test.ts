import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import {
  parseOutboxEnvelope,
  toOutboxEnvelopes,
  type OutboxEnvelope,
  type TrackingEvent,
} from '@pipeline/events';
import {
  ControlPlaneUnavailable,
  RegulatedSubjects,
  subjectHash,
  type RegulatedSubject,
} from '@pipeline/tenancy';
import { DestinationUnavailable, type DeliveryMessage } from './destination';
import { withoutRegulatedEvents, type RegulationSource } from './regulation-filter';

const key = randomBytes(32);
const receivedAt = '2026-11-29T12:00:00.000Z';
const base: Omit<OutboxEnvelope, 'events'> = {
  v: 2,
  accountId: 'acc-1',
  writeKeyId: 'wk-1',
  batchId: 'batch-1',
  receivedAt,
  ip: null,
  userAgent: null,
};

const track = (userId: string, n = 0): TrackingEvent =>
  ({
    type: 'track',
    event: 'Clicked',
    userId,
    messageId: `m-${n}-${userId}`,
    timestamp: receivedAt,
  }) as TrackingEvent;

let offset = 0;
function record(
  events: TrackingEvent[],
  envelope: Partial<Omit<OutboxEnvelope, 'events'>> = {},
  headers: DeliveryMessage['headers'] = {},
): DeliveryMessage {
  const [{ json }] = toOutboxEnvelopes({ ...base, ...envelope }, events) as [{ json: string }];
  offset += 1;
  return {
    topic: 'outbox',
    partition: 0,
    offset: String(offset),
    key: `acc-1:${events[0]?.userId ?? ''}`,
    value: Buffer.from(json),
    headers,
    timestamp: '0',
  };
}

/** An account's subjects as the control plane would answer them, and how often each account was asked. */
function source(subjects: Record<string, RegulatedSubject[]>): RegulationSource & { asked: string[] } {
  const asked: string[] = [];
  return {
    asked,
    forAccount: (accountId) => {
      asked.push(accountId);
      return Promise.resolve(
        new RegulatedSubjects({ hashKey: key.toString('base64'), subjects: subjects[accountId] ?? [] }),
      );
    },
  };
}

const suppressed = (userId: string): RegulatedSubject => ({
  hash: subjectHash(key, 'USER_ID', userId),
  suppressed: true,
  deleteCutoff: null,
});
const deletedUpTo = (userId: string, cutoff: string): RegulatedSubject => ({
  hash: subjectHash(key, 'USER_ID', userId),
  suppressed: false,
  deleteCutoff: cutoff,
});

const eventsOf = (message: DeliveryMessage) => parseOutboxEnvelope(message.value)?.events ?? [];

describe('withoutRegulatedEvents', () => {
  it("takes a suppressed subject's events out, keeping the record's key, headers and position", async () => {
    const mixed = record([track('x', 1), track('y', 2), track('x', 3)], {}, { 'batch-id': 'batch-1' });
    const onlyX = record([track('x', 4)]);
    const onlyY = record([track('y', 5)]);
    const result = await withoutRegulatedEvents(
      [mixed, onlyX, onlyY],
      source({ 'acc-1': [suppressed('x')] }),
    );
    expect(result.suppressed).toBe(3);
    expect(result.deleted).toBe(0);
    expect(result.messages).toHaveLength(2);
    const [first, second] = result.messages as [DeliveryMessage, DeliveryMessage];
    expect(first).toMatchObject({ offset: mixed.offset, key: mixed.key, headers: { 'batch-id': 'batch-1' } });
    expect(eventsOf(first).map((event) => event.messageId)).toEqual(['m-2-y']);
    // Serialized as ingestion serializes an envelope of the remaining events.
    const [{ json }] = toOutboxEnvelopes(base, [track('y', 2)]) as [{ json: string }];
    expect(first.value?.toString()).toBe(json);
    expect(second).toBe(onlyY);
  });

  it("drops what was received at or before a deletion's cut-off and keeps what came after", async () => {
    const regulations = source({ 'acc-1': [deletedUpTo('x', receivedAt)] });
    const atCutoff = record([track('x', 1)]);
    const before = record([track('x', 2)], { receivedAt: '2026-11-29T11:59:59.999Z' });
    const after = record([track('x', 3)], { receivedAt: '2026-11-29T12:00:00.001Z' });
    const result = await withoutRegulatedEvents([atCutoff, before, after], regulations);
    expect(result.messages).toEqual([after]);
    expect(result).toMatchObject({ suppressed: 0, deleted: 2 });
  });

  it('hands an account without subjects on as it is, asking once per account per batch', async () => {
    const regulations = source({ 'acc-2': [suppressed('x')] });
    const outbox = [record([track('x', 1)], {}, { 'account-id': 'acc-1' }), record([track('x', 2)])];
    const result = await withoutRegulatedEvents(outbox, regulations);
    expect(result.messages).toHaveLength(2);
    expect(result.messages[0]).toBe(outbox[0]);
    expect(result.messages[1]).toBe(outbox[1]);
    expect(regulations.asked).toEqual(['acc-1']);
  });

  it("reads the envelope's account when the header's account has subjects", async () => {
    // A header naming a regulated account never spares the record the envelope's own check.
    const regulations = source({ 'acc-1': [suppressed('x')], 'acc-2': [suppressed('other')] });
    const message = record([track('x', 1)], {}, { 'account-id': 'acc-2' });
    const result = await withoutRegulatedEvents([message], regulations);
    expect(result.messages).toEqual([]);
    expect(regulations.asked).toEqual(['acc-2', 'acc-1']);
  });

  it('hands a record that is not an envelope on untouched', async () => {
    const poison: DeliveryMessage = { ...record([track('x')]), value: Buffer.from('{"v":1}') };
    const empty: DeliveryMessage = { ...record([track('x')]), value: null };
    const result = await withoutRegulatedEvents([poison, empty], source({ 'acc-1': [suppressed('x')] }));
    expect(result.messages).toEqual([poison, empty]);
  });

  it('throws DestinationUnavailable when subjects cannot be read, anything else as it is', async () => {
    const unreadable: RegulationSource = {
      forAccount: () => Promise.reject(new ControlPlaneUnavailable('control plane answered 503')),
    };
    await expect(withoutRegulatedEvents([record([track('x')])], unreadable)).rejects.toThrow(
      new DestinationUnavailable('regulated subjects cannot be read: control plane answered 503'),
    );
    const broken: RegulationSource = { forAccount: () => Promise.reject(new TypeError('bug')) };
    await expect(withoutRegulatedEvents([record([track('x')])], broken)).rejects.toBeInstanceOf(TypeError);
  });

  it('keeps exactly the events of unregulated subjects, for any ids (property)', async () => {
    const id = fc.string({ unit: 'grapheme', minLength: 1, maxLength: 12 });
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(id, { minLength: 1, maxLength: 8 }),
        fc.array(fc.tuple(fc.nat(), fc.boolean()), { minLength: 1, maxLength: 20 }),
        async (ids, picks) => {
          const regulatedIds = new Set(ids.filter((_, index) => index % 2 === 0));
          const events = picks.map(([pick], n) => track(ids[pick % ids.length] as string, n));
          const regulations = source({ 'acc-1': [...regulatedIds].map(suppressed) });
          const result = await withoutRegulatedEvents([record(events)], regulations);
          const expected = events.filter((event) => !regulatedIds.has(event.userId as string));
          expect(result.suppressed).toBe(events.length - expected.length);
          expect(result.messages.flatMap(eventsOf)).toEqual(expected);
        },
      ),
    );
  });
});
