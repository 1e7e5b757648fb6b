import fc from 'fast-check';
import { compareEventOrders, eventOrderOf, eventOrderSql } from './event-order';

// The ordering key without a database; postgres/warehouse-event-order.test.ts checks that PostgreSQL
// orders the stored rows by it the same way.

const order = (timestamp: unknown, receivedAt: unknown, messageId: unknown) =>
  eventOrderOf({ timestamp, received_at: receivedAt, message_id: messageId });

describe('eventOrderOf', () => {
  it('writes both times as 17 digits of shifted milliseconds, then the message id', () => {
    expect(order('1970-01-01T00:00:00.000Z', '2026-06-01T00:00:00.000Z', 'm-1')).toBe(
      '08640000000000001.08641780272000001.m-1',
    );
    expect(order(new Date('1969-12-31T23:59:59.999Z'), new Date(0), 'x')).toBe(
      '08640000000000000.08640000000000001.x',
    );
    expect(order('-271821-04-20T00:00:00.000Z', '+275760-09-13T00:00:00.000Z', '')).toBe(
      '00000000000000001.17280000000000001.',
    );
  });

  it('writes a missing or unreadable time, and a missing message id, as the oldest', () => {
    expect(order(null, undefined, null)).toBe('00000000000000000.00000000000000000.');
    expect(order('not a time', 12, undefined)).toBe('00000000000000000.00000000000000000.');
  });

  it('replaces a lone surrogate in the message id as UTF-8 encoding does', () => {
    expect(order(null, null, 'a\uD800b\uDC00')).toBe('00000000000000000.00000000000000000.a\uFFFDb\uFFFD');
    expect(order(null, null, '\u{1F600}')).toBe('00000000000000000.00000000000000000.\u{1F600}');
  });

  it('orders by timestamp, then received_at, then message id', () => {
    const keys = [
      order(null, '2026-06-09T00:00:00.000Z', 'z'),
      order('0001-01-01T00:00:00.000Z', '2026-06-01T00:00:00.000Z', 'z'),
      order('2026-06-01T00:00:00.000Z', '2026-06-01T00:00:00.000Z', 'z'),
      order('2026-06-01T00:00:00.001Z', '2026-06-01T00:00:00.000Z', 'a'),
      order('2026-06-01T00:00:00.001Z', '2026-06-01T00:00:01.000Z', 'a'),
      order('2026-06-01T00:00:00.001Z', '2026-06-01T00:00:01.000Z', 'b'),
      order('2026-06-01T00:00:00.001Z', '2026-06-01T00:00:01.000Z', 'ba'),
      order('9999-12-31T23:59:59.999Z', null, ''),
    ];
    for (let i = 1; i < keys.length; i += 1) {
      expect(compareEventOrders(keys[i - 1]!, keys[i]!)).toBeLessThan(0);
      expect(compareEventOrders(keys[i]!, keys[i - 1]!)).toBeGreaterThan(0);
    }
  });
});

describe('compareEventOrders', () => {
  it('compares code points, as PostgreSQL compares UTF-8 under COLLATE "C"', () => {
    // UTF-16 puts U+FFFF after the surrogates of U+10000; code points put it before.
    expect(compareEventOrders('\uFFFF', '\u{10000}')).toBeLessThan(0);
    expect(compareEventOrders('\u{10000}', '\uFFFF')).toBeGreaterThan(0);
    expect(compareEventOrders('\uE000', '\uD7FF')).toBeGreaterThan(0);
    expect(compareEventOrders('\uD7FF', '\u{10000}')).toBeLessThan(0);
    // The first and last units of each range: U+E000 is below every supplementary character,
    // U+D7FF below U+E000, and the low surrogates keep their order.
    expect(compareEventOrders('\uE000', '\u{10000}')).toBeLessThan(0);
    expect(compareEventOrders('\uD7FF', '\uE000')).toBeLessThan(0);
    expect(compareEventOrders('\uE000', '\uE001')).toBeLessThan(0);
    expect(compareEventOrders('\u{10000}', '\uE800')).toBeGreaterThan(0);
    expect(compareEventOrders('\u{103FF}', '\u{103FE}')).toBeGreaterThan(0);
    expect(compareEventOrders('ab', 'ab')).toBe(0);
    expect(compareEventOrders('a', 'ab')).toBeLessThan(0);
    expect(compareEventOrders('b', 'ab')).toBeGreaterThan(0);
  });

  it('agrees with the order of the UTF-8 bytes for any strings', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), fc.string({ unit: 'binary' }), (a, b) => {
        const bytes = Math.sign(Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8')));
        expect(Math.sign(compareEventOrders(a, b))).toBe(bytes);
      }),
      { numRuns: 2000 },
    );
  });
});

describe('eventOrderSql', () => {
  it('is the same key computed from a stored row, infinite times as missing', () => {
    const time = (column: string) =>
      `COALESCE(CASE WHEN isfinite(stored.${column}) THEN lpad((floor(extract(epoch FROM stored.${column}) * 1000)::bigint + 8640000000000001)::text, 17, '0') END, '00000000000000000')`;
    expect(eventOrderSql('stored')).toBe(
      `(${time('"timestamp"')} || '.' || ${time('received_at')} || '.' || COALESCE(stored.message_id, '')) COLLATE "C"`,
    );
  });
});
