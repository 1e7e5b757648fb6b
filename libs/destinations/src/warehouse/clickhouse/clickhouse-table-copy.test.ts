import { UnserializableValue } from '../copy-text';
import { eventOrderOf } from '../event-order';
import { checkedShape } from '../table-copy';
import {
  checkStreamShape,
  clickhouseValue,
  daysQuery,
  exportExpression,
  keysOnQuery,
  streamShape,
  warehouseRowValues,
  warehouseShape,
} from './clickhouse-table-copy';

describe('ClickHouse tables as a move copies them (pure)', () => {
  it('describes every warehouse table in PostgreSQL type names that checkedShape takes', () => {
    for (const table of ['events', 'users', 'groups', 'aliases'] as const)
      expect(checkedShape(warehouseShape(table))).toEqual(warehouseShape(table));
    const users = warehouseShape('users');
    expect(users.key).toEqual(['user_id']);
    expect(users.columns.filter((c) => c.name.startsWith('_'))).toEqual([
      { name: '_event_order', type: 'text' },
      { name: '_trait_orders', type: 'jsonb' },
    ]);
    expect(users.columns.find((c) => c.name === 'received_at')?.type).toBe('timestamp with time zone');
    expect(users.columns.find((c) => c.name === 'context_screen_width')?.type).toBe('integer');
  });

  it('types stream columns by their ClickHouse type, JSON by its comment', () => {
    expect(
      streamShape('deals', [
        { name: 'id', type: 'String' },
        { name: '_raw', type: 'String' },
        { name: '_synced_at', type: "DateTime64(6, 'UTC')" },
        { name: 'amount', type: 'Nullable(Float64)' },
        { name: 'won', type: 'Nullable(Bool)' },
        { name: 'owner', type: 'Nullable(String)', comment: 'jsonb' },
        { name: 'stage', type: 'Nullable(String)', comment: '' },
      ]).columns.map((c) => c.type),
    ).toEqual(['text', 'jsonb', 'timestamp with time zone', 'numeric', 'boolean', 'jsonb', 'text']);
  });

  it('refuses a stream shape with two key columns or without _raw', () => {
    const columns = [
      { name: 'a', type: 'text' },
      { name: 'b', type: 'text' },
      { name: '_raw', type: 'jsonb' },
      { name: '_synced_at', type: 'timestamp with time zone' },
    ];
    expect(() => checkStreamShape({ table: 't', kind: 'stream', columns, key: ['a', 'b'] })).toThrow(
      'stream table t must have one key column for ClickHouse',
    );
    expect(() =>
      checkStreamShape({ table: 't', kind: 'stream', columns: columns.slice(0, 2), key: ['a'] }),
    ).toThrow('stream table t must have _raw and _synced_at');
    expect(checkStreamShape({ table: 't', kind: 'stream', columns, key: ['a'] })).toBe('a');
  });

  it('reads values for their ClickHouse type, refusing what the column cannot hold as data', () => {
    expect(clickhouseValue('received_at', "DateTime64(6, 'UTC')", '2026-03-01 10:00:00.5+01')).toBe(
      '2026-03-01 09:00:00.500000',
    );
    expect(() => clickhouseValue('received_at', "DateTime64(6, 'UTC')", '1899-12-31 23:59:59+00')).toThrow(
      UnserializableValue,
    );
    expect(clickhouseValue('received_at', "DateTime64(6, 'UTC')", '1900-01-01 00:00:00+00')).toBe(
      '1900-01-01 00:00:00.000000',
    );
    expect(() => clickhouseValue('message_id', 'String', null)).toThrow('message_id cannot be null');
    expect(clickhouseValue('w', 'Nullable(Int32)', '-12')).toBe(-12);
    expect(() => clickhouseValue('w', 'Nullable(Int32)', '1.5')).toThrow(UnserializableValue);
    expect(clickhouseValue('n', 'Nullable(Float64)', '1e21')).toBe(1e21);
    expect(clickhouseValue('n', 'Nullable(Float64)', 'NaN')).toBeNull();
    expect(clickhouseValue('b', 'Nullable(Bool)', 't')).toBe(true);
    expect(clickhouseValue('b', 'Nullable(Bool)', 'false')).toBe(false);
    expect(clickhouseValue('s', 'Nullable(String)', null)).toBeNull();
  });

  it("gives a row stored before orders were kept its own event's order and no trait orders", () => {
    const shape = warehouseShape('users');
    const fields = new Map<string, string | null>(shape.columns.map((c) => [c.name, null]));
    fields.set('user_id', 'u1');
    fields.set('message_id', 'm1');
    fields.set('timestamp', '0001-01-01 00:00:00+00');
    fields.set('received_at', '2026-03-01 10:00:00.123456+00');
    fields.set('traits', '{"a": 1}');
    const values = warehouseRowValues('users', fields);
    expect(values).toMatchObject({
      user_id: 'u1',
      timestamp: '0001-01-01T00:00:00.000000Z',
      received_at: '2026-03-01 10:00:00.123456',
      traits: '{"a": 1}',
      _trait_orders: '{}',
      _event_order: eventOrderOf({
        timestamp: '0001-01-01T00:00:00.000Z',
        received_at: '2026-03-01T10:00:00.123Z',
        message_id: 'm1',
      }),
    });
    fields.set('_event_order', 'kept');
    fields.set('_trait_orders', '{"a": "kept"}');
    expect(warehouseRowValues('users', fields)).toMatchObject({
      _event_order: 'kept',
      _trait_orders: '{"a": "kept"}',
    });
  });

  it('reads times as PostgreSQL COPY reads them and hashes keys as daysStatement does', () => {
    expect(exportExpression('received_at', "DateTime64(6, 'UTC')")).toBe(
      "formatDateTime(`received_at`, '%Y-%m-%d %H:%i:%S.%f+00', 'UTC')",
    );
    expect(exportExpression('traits', 'Nullable(String)')).toBe('`traits`');
    expect(exportExpression('w', 'Nullable(Int32)')).toBe('toString(`w`)');
    expect(exportExpression('gone', undefined)).toBe('NULL');
    expect(daysQuery('account_a', 'users')).toContain(
      'sum(toUInt256(bitShiftRight(reinterpretAsUInt64(reverse(substring(MD5(`user_id`), 1, 8))), 4)))',
    );
    expect(daysQuery('account_a', 'users')).toContain('FROM `account_a`.`users` GROUP BY');
    expect(daysQuery('account_a', 'events')).toContain('FROM `account_a`.`events` FINAL');
    expect(keysOnQuery('account_a', 'deals')).toContain(
      "WHERE ifNull(formatDateTime(`_synced_at`, '%Y-%m-%d', 'UTC'), 'none') = {day:String}",
    );
  });
});
