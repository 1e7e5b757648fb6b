import {
  PREVIEW_BYTES,
  PREVIEW_EVENT_BYTES,
  PREVIEW_EVENTS,
  previewEvents,
  previewOf,
} from './dead-letter-preview';

// What the index stores for the list: bounded whatever the record holds.

const event = (n: number, bytes = 100) => ({
  type: 'track',
  messageId: `m${n}`,
  properties: { pad: 'x'.repeat(bytes) },
});

describe('previewOf', () => {
  it('keeps the first 10 events as they are, and counts them all', () => {
    const events = Array.from({ length: 25 }, (_, n) => event(n));
    const preview = previewOf(events);
    expect(preview.eventCount).toBe(25);
    expect(preview.events).toEqual(events.slice(0, PREVIEW_EVENTS));
  });

  it('shows an event over 16 KB as a stub, and the ones after it as they are', () => {
    const preview = previewOf([event(1), event(2, PREVIEW_EVENT_BYTES), event(3)]);
    expect(preview.events).toEqual([event(1), { messageId: 'm2', type: 'track', truncated: true }, event(3)]);
  });

  it('stubs the events past 64 KB shown together, and stays under that bound', () => {
    const events = Array.from({ length: 10 }, (_, n) => event(n, 15_000));
    const preview = previewOf(events);
    const shown = preview.events.filter((e) => e.truncated !== true);
    // 15 KB each: four fit in 64 KB, the fifth would not.
    expect(shown.map((e) => e.messageId)).toEqual(['m0', 'm1', 'm2', 'm3']);
    expect(preview.events.slice(4)).toEqual(
      events.slice(4).map((e) => ({ messageId: e.messageId, type: 'track', truncated: true })),
    );
    expect(Buffer.byteLength(JSON.stringify(preview.events))).toBeLessThan(PREVIEW_BYTES + 1000);
  });

  it('shows an event of exactly 16 KB, and events of exactly 64 KB together, as they are', () => {
    // Pads each event so that its JSON is exactly PREVIEW_EVENT_BYTES: four fill PREVIEW_BYTES.
    const exact = (n: number) =>
      event(n, PREVIEW_EVENT_BYTES - Buffer.byteLength(JSON.stringify(event(n, 0))));
    const events = [0, 1, 2, 3, 4].map(exact);
    expect(events.map((e) => Buffer.byteLength(JSON.stringify(e)))).toEqual(
      Array(5).fill(PREVIEW_EVENT_BYTES),
    );
    expect(4 * PREVIEW_EVENT_BYTES).toBe(PREVIEW_BYTES);
    expect(previewOf(events).events).toEqual([
      ...events.slice(0, 4),
      { messageId: 'm4', type: 'track', truncated: true },
    ]);
  });
});

describe('previewEvents', () => {
  it('reads a stored preview, and shows none of one that is not a JSON array', () => {
    expect(previewEvents(JSON.stringify([event(1)]))).toEqual([event(1)]);
    expect(previewEvents('{"a":1}')).toEqual([]);
    expect(previewEvents('not json')).toEqual([]);
  });
});
