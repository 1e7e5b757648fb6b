import fc from 'fast-check';
import { parseJsonText } from '@pipeline/events';
import { UnserializableValue } from '../copy-text';
import { eventOrderOf } from '../event-order';
import {
  clickhouseJsonText,
  receivedText,
  rowValues,
  storedTime,
  utf8Text,
  versionOf,
} from './clickhouse-rows';

// Rows as ClickHouse stores them, without a server; clickhouse-engine.test.ts reads them back.

const json = new Set(['traits', 'properties', 'context_extra']);

describe('storedTime', () => {
  it('writes ISO-8601 UTC with microseconds and a Z, from text or a Date', () => {
    expect(storedTime('2026-01-15T10:00:00+02:00')).toBe('2026-01-15T08:00:00.000000Z');
    expect(storedTime(new Date(Date.UTC(2026, 0, 2, 3, 4, 5, 678)))).toBe('2026-01-02T03:04:05.678000Z');
    expect(storedTime('0001-01-01T00:00:00.000Z')).toBe('0001-01-01T00:00:00.000000Z');
    expect(storedTime('9999-12-31T23:59:59.999Z')).toBe('9999-12-31T23:59:59.999000Z');
  });

  it('is null for what is not a time', () => {
    expect([
      storedTime(null),
      storedTime(undefined),
      storedTime('soon'),
      storedTime(12),
      storedTime({}),
    ]).toEqual([null, null, null, null, null]);
    expect(storedTime(new Date(Number.NaN))).toBeNull();
  });

  it('sorts as text in the order of time over the years 0001-9999', () => {
    const instant = fc.date({
      min: new Date('0001-01-01T00:00:00.000Z'),
      max: new Date('9999-12-31T23:59:59.999Z'),
      noInvalidDate: true,
    });
    fc.assert(
      fc.property(instant, instant, (a, b) => {
        const [x, y] = [storedTime(a) as string, storedTime(b) as string];
        expect(x).toHaveLength(27);
        expect(x < y ? -1 : x > y ? 1 : 0).toBe(Math.sign(a.getTime() - b.getTime()));
        expect(new Date(x).getTime()).toBe(a.getTime());
      }),
      { numRuns: 500 },
    );
  });
});

describe('receivedText', () => {
  it("writes DateTime64(6)'s text in UTC", () => {
    expect(receivedText('2026-06-01T12:34:56.789Z')).toBe('2026-06-01 12:34:56.789000');
    expect(receivedText(new Date(0))).toBe('1970-01-01 00:00:00.000000');
    expect(receivedText('nope')).toBeNull();
  });
});

describe('versionOf', () => {
  it('counts down from the largest exact integer as the receipt is later: the first copy is kept', () => {
    expect(versionOf({ received_at: '1970-01-01T00:00:00.000Z' })).toBe(Number.MAX_SAFE_INTEGER);
    expect(versionOf({ received_at: '1970-01-01T00:00:01.000Z' })).toBe(Number.MAX_SAFE_INTEGER - 1000);
    expect(versionOf({ received_at: '2026-01-01T00:00:00.000Z' })).toBeGreaterThan(
      versionOf({ received_at: '2026-01-01T00:00:00.001Z' }),
    );
  });

  it('never exceeds the top: a receipt before 1970 or none counts as 1970', () => {
    expect(versionOf({ received_at: '1969-01-01T00:00:00.000Z' })).toBe(Number.MAX_SAFE_INTEGER);
    expect(versionOf({})).toBe(Number.MAX_SAFE_INTEGER);
  });
});

describe('utf8Text', () => {
  it('replaces lone surrogates only', () => {
    expect(utf8Text('a\uD800b\uDC00c')).toBe('a\uFFFDb\uFFFDc');
    expect(utf8Text('\u{1F600} ok \u0000')).toBe('\u{1F600} ok \u0000');
  });
});

describe('rowValues', () => {
  const event = {
    message_id: 'm-1',
    anonymous_id: 'a\uD800',
    user_id: null,
    timestamp: '2026-01-15T10:00:00.000Z',
    sent_at: undefined,
    received_at: '2026-01-15T10:00:01.500Z',
    context_screen_width: 1280,
    context_extra: { 'a.b': 1, nested: { x: [null] } },
    type: 'track',
    event: 'Signed Up',
    properties: { plan: 'pro', empty: {} },
  };

  it('gives every column of the events table, times and JSON as stored', () => {
    const values = rowValues('events', event, json);
    expect(values).toMatchObject({
      message_id: 'm-1',
      anonymous_id: 'a\uFFFD',
      user_id: null,
      timestamp: '2026-01-15T10:00:00.000000Z',
      sent_at: null,
      original_timestamp: null,
      received_at: '2026-01-15 10:00:01.500000',
      context_screen_width: 1280,
      context_extra: '{"a.b":1,"nested":{"x":[null]}}',
      properties: '{"plan":"pro","empty":{}}',
      type: 'track',
      event: 'Signed Up',
      name: null,
      _version: Number.MAX_SAFE_INTEGER - Date.parse('2026-01-15T10:00:01.500Z'),
    });
    expect(Object.keys(values)).not.toContain('_event_order');
    expect(Object.keys(values)).not.toContain('_trait_orders');
  });

  it('gives users their ordering key and traits as JSON text', () => {
    const row = { ...event, user_id: 'u-1', traits: { plan: 'pro' } };
    const values = rowValues('users', row, json);
    expect(values._event_order).toBe(eventOrderOf(row));
    expect(values.traits).toBe('{"plan":"pro"}');
    expect(values.user_id).toBe('u-1');
  });

  it("writes every event time as ISO text, and a JSON column's text value as JSON", () => {
    const values = rowValues(
      'events',
      {
        ...event,
        original_timestamp: '2026-01-15T09:59:59.5Z',
        sent_at: new Date(Date.UTC(2026, 0, 15, 10)),
        properties: 'plain',
      },
      json,
    );
    expect(values.original_timestamp).toBe('2026-01-15T09:59:59.500000Z');
    expect(values.sent_at).toBe('2026-01-15T10:00:00.000000Z');
    expect(values.properties).toBe('"plain"');
    expect(rowValues('events', { ...event, properties: 'plain' }, new Set()).properties).toBe('plain');
  });

  it('serializes an object in a text column as JSON, as the PostgreSQL loader does', () => {
    expect(rowValues('aliases', { ...event, previous_id: { odd: true } }, json).previous_id).toBe(
      '{"odd":true}',
    );
    expect(rowValues('aliases', { ...event, previous_id: 'p\uDC00' }, json).previous_id).toBe('p\uFFFD');
  });

  it('refuses a value JSON cannot carry as data (22000)', () => {
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    expect(() => rowValues('events', { ...event, properties: cycle }, json)).toThrow(UnserializableValue);
    try {
      rowValues('events', { ...event, properties: { big: 1n } }, json);
      throw new Error('not refused');
    } catch (error) {
      expect((error as UnserializableValue).code).toBe('22000');
      expect((error as Error).message).toMatch(/^value cannot be serialized as JSON: /);
    }
  });
});

describe('clickhouseJsonText', () => {
  it('writes integers outside Int64 in exponent form, which ClickHouse parses', () => {
    expect(clickhouseJsonText({ '': -(2 ** 63), big: 2 ** 64, n: [1, -1.5, 2 ** 62] })).toBe(
      '{"":-9.223372036854776e+18,"big":1.8446744073709552e+19,"n":[1,-1.5,4611686018427388000]}',
    );
    expect(clickhouseJsonText(-(2 ** 63) + 1024)).toBe('-9223372036854775000');
    expect(clickhouseJsonText('text')).toBe('"text"');
  });

  it('is JSON.stringify in value, and leaves no integer token past Int64', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const text = clickhouseJsonText(value);
        expect(parseJsonText(text)).toEqual(parseJsonText(JSON.stringify(value)));
        // Tokens outside strings: strings are dropped first.
        const bare = text.replace(/"(?:[^"\\]|\\.)*"/g, '""');
        for (const token of bare.match(/-?\d+(?:\.\d+)?(?:e[+-]?\d+)?/gi) ?? [])
          if (/^-?\d+$/.test(token)) expect(Math.abs(Number(token))).toBeLessThan(2 ** 63);
      }),
      { numRuns: 2000 },
    );
  });
});
