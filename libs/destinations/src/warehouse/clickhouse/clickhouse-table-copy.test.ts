import { UnserializableValue } from '../copy-text';
import { eventOrderOf } from '../event-order';
import { checkedShape } from '../postgres/table-copy';
import { warehouseTables } from '@pipeline/events';
import { versionOf } from './clickhouse-rows';
import {
  canonicalJson,
  checkStreamShape,
  clickhouseValue,
  dayColumnOf,
  daysQuery,
  exportExpression,
  fieldsByName,
  keyColumnOf,
  keysOnQuery,
  postgresTypeOfStream,
  readFrom,
  streamColumnTypeOf,
  streamKey,
  streamShape,
  warehouseRowValues,
  warehouseShape,
  warehouseTableNames,
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

/** The message of what `run` throws, to assert it exactly. */
function messageOf(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error('nothing was thrown');
}

describe('ClickHouse tables as a move copies them, exactly', () => {
  const pgTypes = {
    text: 'text',
    integer: 'integer',
    timestamptz: 'timestamp with time zone',
    jsonb: 'jsonb',
  };

  it('shapes each warehouse table: its columns in PostgreSQL names, its key, the orders of users and groups', () => {
    expect(warehouseTableNames).toEqual(['events', 'users', 'groups', 'aliases']);
    const keys = { events: 'message_id', users: 'user_id', groups: 'group_id', aliases: 'message_id' };
    for (const table of warehouseTableNames) {
      const columns = Object.entries(warehouseTables[table]).map(([name, type]) => ({
        name,
        type: pgTypes[type],
      }));
      const orders =
        table === 'users' || table === 'groups'
          ? [
              { name: '_event_order', type: 'text' },
              { name: '_trait_orders', type: 'jsonb' },
            ]
          : [];
      expect(warehouseShape(table)).toEqual({
        table,
        kind: table,
        columns: [...columns, ...orders],
        key: [keys[table]],
      });
      expect(keyColumnOf(table)).toBe(keys[table]);
      expect(dayColumnOf(table)).toBe('received_at');
    }
    expect(streamKey).toBe('id');
    expect(keyColumnOf('deals')).toBe('id');
    expect(dayColumnOf('deals')).toBe('_synced_at');
    expect(keyColumnOf('users_rows')).toBe('id');
  });

  it('maps each ClickHouse stream column type to its PostgreSQL type', () => {
    const cases: [name: string, type: string, comment: string | undefined, postgres: string][] = [
      ['_raw', 'String', undefined, 'jsonb'],
      ['_raw', 'Nullable(Float64)', '', 'jsonb'],
      ['owner', 'Nullable(String)', 'jsonb', 'jsonb'],
      ['owner', 'Nullable(String)', 'json', 'text'],
      ['owner', 'Nullable(String)', undefined, 'text'],
      ['_synced_at', "DateTime64(6, 'UTC')", undefined, 'timestamp with time zone'],
      ['t', "Nullable(DateTime64(6, 'UTC'))", undefined, 'text'],
      ['n', 'Float64', undefined, 'numeric'],
      ['n', 'Nullable(Float32)', undefined, 'numeric'],
      ['n', 'Decimal(10, 2)', undefined, 'numeric'],
      ['n', 'Int32', undefined, 'numeric'],
      ['n', 'Nullable(UInt8)', undefined, 'numeric'],
      ['n', 'Int', undefined, 'text'],
      ['n', 'Interval', undefined, 'text'],
      ['b', 'Bool', undefined, 'boolean'],
      ['b', 'Nullable(Bool)', undefined, 'boolean'],
      ['s', 'String', undefined, 'text'],
      ['s', 'LowCardinality(String)', undefined, 'text'],
    ];
    for (const [name, type, comment, postgres] of cases)
      expect([name, type, comment, postgresTypeOfStream(name, type, comment)]).toEqual([
        name,
        type,
        comment,
        postgres,
      ]);
    expect(postgresTypeOfStream('owner', 'Nullable(String)')).toBe('text');
  });

  it('shapes a stream table with key id and each column typed', () => {
    expect(
      streamShape('deals', [
        { name: 'id', type: 'String' },
        { name: '_raw', type: 'String' },
        { name: 'amount', type: 'Nullable(Int64)' },
      ]),
    ).toEqual({
      table: 'deals',
      kind: 'stream',
      columns: [
        { name: 'id', type: 'text' },
        { name: '_raw', type: 'jsonb' },
        { name: 'amount', type: 'numeric' },
      ],
      key: ['id'],
    });
  });

  it('maps each PostgreSQL type of a stream column to its ClickHouse type', () => {
    const cases: [postgres: string, clickhouse: string][] = [
      ['numeric', 'Nullable(Float64)'],
      ['double precision', 'Nullable(Float64)'],
      ['real', 'Nullable(Float64)'],
      ['integer', 'Nullable(Float64)'],
      ['bigint', 'Nullable(Float64)'],
      ['smallint', 'Nullable(Float64)'],
      ['boolean', 'Nullable(Bool)'],
      ['text', 'Nullable(String)'],
      ['jsonb', 'Nullable(String)'],
      ['timestamp with time zone', 'Nullable(String)'],
      ['', 'Nullable(String)'],
      ['numeric(10,2)', 'Nullable(String)'],
      ['integer[]', 'Nullable(String)'],
      ['biginteger', 'Nullable(String)'],
      ['big_integer', 'Nullable(String)'],
      ['xsmallint', 'Nullable(String)'],
      ['smallints', 'Nullable(String)'],
      ['boolean[]', 'Nullable(String)'],
    ];
    for (const [postgres, clickhouse] of cases)
      expect([postgres, streamColumnTypeOf(postgres)]).toEqual([postgres, clickhouse]);
  });

  it('exports each ClickHouse type as the text PostgreSQL reads', () => {
    const time = (c: string) => `formatDateTime(\`${c}\`, '%Y-%m-%d %H:%i:%S.%f+00', 'UTC')`;
    expect(exportExpression('_synced_at', "DateTime64(6, 'UTC')")).toBe(time('_synced_at'));
    expect(exportExpression('t', "Nullable(DateTime64(6, 'UTC'))")).toBe(time('t'));
    expect(exportExpression('t', "LowCardinality(DateTime64(6, 'UTC'))")).toBe('toString(`t`)');
    expect(exportExpression('id', 'String')).toBe('`id`');
    expect(exportExpression('s', 'Nullable(String)')).toBe('`s`');
    expect(exportExpression('s', "String DEFAULT '{}'")).toBe('toString(`s`)');
    expect(exportExpression('b', 'Nullable(Bool)')).toBe('toString(`b`)');
    expect(exportExpression('gone', undefined)).toBe('NULL');
  });

  it('reads folded tables through their view and the others FINAL', () => {
    expect(readFrom('a', 'users')).toBe('`a`.`users`');
    expect(readFrom('a', 'groups')).toBe('`a`.`groups`');
    expect(readFrom('a', 'events')).toBe('`a`.`events` FINAL');
    expect(readFrom('a', 'deals')).toBe('`a`.`deals` FINAL');
  });

  it('prints the days and keys queries exactly', () => {
    const hash = (k: string) =>
      `bitShiftRight(reinterpretAsUInt64(reverse(substring(MD5(\`${k}\`), 1, 8))), 4)`;
    const day = (c: string) => `ifNull(formatDateTime(\`${c}\`, '%Y-%m-%d', 'UTC'), 'none')`;
    expect(daysQuery('a', 'groups')).toBe(`SELECT ${day('received_at')} AS day, toString(count()) AS rows,
                 toString(sum(toUInt256(${hash('group_id')}))) AS hash
            FROM \`a\`.\`groups\` GROUP BY day ORDER BY day`);
    expect(daysQuery('a', 'deals')).toBe(`SELECT ${day('_synced_at')} AS day, toString(count()) AS rows,
                 toString(sum(toUInt256(${hash('id')}))) AS hash
            FROM \`a\`.\`deals\` FINAL GROUP BY day ORDER BY day`);
    expect(keysOnQuery('a', 'aliases')).toBe(`SELECT \`message_id\` AS key FROM \`a\`.\`aliases\` FINAL
           WHERE ${day('received_at')} = {day:String} ORDER BY key`);
    expect(keysOnQuery('a', 'users')).toBe(`SELECT \`user_id\` AS key FROM \`a\`.\`users\`
           WHERE ${day('received_at')} = {day:String} ORDER BY key`);
    expect(keysOnQuery('a', 'deals')).toBe(`SELECT \`id\` AS key FROM \`a\`.\`deals\` FINAL
           WHERE ${day('_synced_at')} = {day:String} ORDER BY key`);
  });

  it('reads DateTime64 values in 1900-2299 only, naming the column and the text', () => {
    const type = "DateTime64(6, 'UTC')";
    expect(clickhouseValue('r', type, '2299-12-31 23:59:59.999999+00')).toBe('2299-12-31 23:59:59.999999');
    expect(clickhouseValue('r', `Nullable(${type})`, '2300-01-01 00:30:00+01')).toBe(
      '2299-12-31 23:30:00.000000',
    );
    for (const text of [
      '2300-01-01 00:00:00+00',
      '1899-12-31 23:59:59.999999+00',
      '0001-01-01 00:00:00+00 BC',
      '10000-01-01 00:00:00+00',
    ])
      expect(messageOf(() => clickhouseValue('r', type, text))).toBe(
        `r ${text} is outside what ClickHouse's DateTime64 holds (1900-2299)`,
      );
    expect(() => clickhouseValue('r', type, '0001-01-01 00:00:00+00 BC')).toThrow(UnserializableValue);
    expect(() => clickhouseValue('r', type, 'soon')).toThrow(UnserializableValue);
  });

  it('reads nulls where the type holds one, and refuses them elsewhere', () => {
    expect(clickhouseValue('s', 'Nullable(String)', null)).toBeNull();
    expect(clickhouseValue('o', "String DEFAULT '{}'", null)).toBeNull();
    expect(messageOf(() => clickhouseValue('o', "LowCardinality(String DEFAULT '{}')", null))).toBe(
      'o cannot be null',
    );
    expect(messageOf(() => clickhouseValue('id', 'String', null))).toBe('id cannot be null');
    expect(() => clickhouseValue('id', 'String', null)).toThrow(UnserializableValue);
  });

  it('reads integers, numbers and booleans for every spelling', () => {
    expect(clickhouseValue('w', 'Nullable(Int32)', '12')).toBe(12);
    expect(clickhouseValue('w', 'Nullable(Int32)', '+12')).toBe(12);
    expect(clickhouseValue('w', 'Int32', '-0012')).toBe(-12);
    for (const text of ['1.5', '', '1e3', 'x12', '12x'])
      expect(messageOf(() => clickhouseValue('w', 'Nullable(Int32)', text))).toBe(
        `w ${text} is not an integer`,
      );
    const numbers: [string, number | null][] = [
      ['12', 12],
      ['-12', -12],
      ['+12', 12],
      ['1.', 1],
      ['1.25', 1.25],
      ['.25', 0.25],
      ['-.5', -0.5],
      ['1e5', 1e5],
      ['1E+5', 1e5],
      ['1.5e-3', 0.0015],
      ['.5E10', 5e9],
      ['NaN', null],
      ['Infinity', null],
      ['', null],
      ['.', null],
      ['a1', null],
      ['1a', null],
      ['1.x', null],
      ['.x', null],
      ['1e', null],
      ['1ex5', null],
      ['--1', null],
      ['0x10', null],
    ];
    for (const [text, value] of numbers)
      expect([text, clickhouseValue('n', 'Nullable(Float64)', text)]).toEqual([text, value]);
    const booleans: [string, boolean | null][] = [
      ['t', true],
      ['true', true],
      ['f', false],
      ['false', false],
      ['', null],
      ['x', null],
      ['1', null],
    ];
    for (const [text, value] of booleans)
      expect([text, clickhouseValue('b', 'Nullable(Bool)', text)]).toEqual([text, value]);
    expect(clickhouseValue('s', 'Nullable(String)', 't')).toBe('t');
    expect(clickhouseValue('s', 'String', '')).toBe('');
  });

  const row = (table: 'users' | 'events', set: Record<string, string | null>) => {
    const fields = new Map<string, string | null>(warehouseShape(table).columns.map((c) => [c.name, null]));
    for (const [k, v] of Object.entries(set)) fields.set(k, v);
    return fields;
  };

  it('stores an event row: event times as ISO text, _version from the receipt, no orders', () => {
    const values = warehouseRowValues(
      'events',
      row('events', {
        message_id: 'm1',
        timestamp: '2026-03-01 12:00:00+02',
        sent_at: '0001-01-01 00:00:00.000001+00',
        received_at: '2026-03-01 10:00:00.123456+00',
        context_screen_width: '640',
        properties: '{"a": 1}',
      }),
    );
    expect(values).toEqual({
      ...Object.fromEntries(Object.keys(warehouseTables.events).map((k) => [k, null])),
      message_id: 'm1',
      timestamp: '2026-03-01T10:00:00.000000Z',
      sent_at: '0001-01-01T00:00:00.000001Z',
      received_at: '2026-03-01 10:00:00.123456',
      context_screen_width: 640,
      properties: '{"a": 1}',
      _version: versionOf({ received_at: new Date('2026-03-01T10:00:00.123Z') }),
    });
    expect(values._version).not.toBe(versionOf({}));
  });

  it('refuses an event time outside 0001-9999, naming it', () => {
    const fields = row('events', {
      message_id: 'm1',
      received_at: '2026-03-01 10:00:00+00',
      timestamp: '0001-12-31 23:00:00+00 BC',
    });
    expect(messageOf(() => warehouseRowValues('events', fields))).toBe(
      'timestamp 0001-12-31 23:00:00+00 BC is outside the years 0001-9999',
    );
    expect(() => warehouseRowValues('events', fields)).toThrow(UnserializableValue);
  });

  it('stores a user row with its orders last, and no timestamp as no timestamp in the order', () => {
    const values = warehouseRowValues(
      'users',
      row('users', { user_id: 'u1', message_id: 'm1', received_at: '2026-03-01 10:00:00+00' }),
    );
    expect(Object.keys(values)).toEqual([
      ...Object.keys(warehouseTables.users),
      '_version',
      '_event_order',
      '_trait_orders',
    ]);
    expect(values._event_order).toBe(
      eventOrderOf({ timestamp: null, received_at: new Date('2026-03-01T10:00:00Z'), message_id: 'm1' }),
    );
    expect(values._event_order).not.toBe(
      eventOrderOf({
        timestamp: new Date(0),
        received_at: new Date('2026-03-01T10:00:00Z'),
        message_id: 'm1',
      }),
    );
    expect(values._trait_orders).toBe('{}');
  });

  it('names a COPY row by its shape, refusing another width', () => {
    const shape = {
      table: 't',
      kind: 'stream' as const,
      columns: [
        { name: 'a', type: 'text' },
        { name: 'b', type: 'text' },
      ],
      key: ['a'],
    };
    expect([...fieldsByName(shape, ['x', null])]).toEqual([
      ['a', 'x'],
      ['b', null],
    ]);
    expect(messageOf(() => fieldsByName(shape, ['x']))).toBe('a row of t has 1 fields, its shape 2');
    expect(() => fieldsByName(shape, ['x', 'y', 'z'])).toThrow(UnserializableValue);
    expect(messageOf(() => fieldsByName(shape, ['x', 'y', 'z']))).toBe(
      'a row of t has 3 fields, its shape 2',
    );
  });

  it('spells JSON one way: keys sorted at every depth, arrays in order, other text as it is', () => {
    expect(canonicalJson('{"b": {"d": [3, {"f": 1, "e": "x"}], "c": null}, "a": "ab"}')).toBe(
      '{"a":"ab","b":{"c":null,"d":[3,{"e":"x","f":1}]}}',
    );
    expect(canonicalJson(' [2, 1, "s", true, null] ')).toBe('[2,1,"s",true,null]');
    expect(canonicalJson('{"n": 1.50, "s": "t"}')).toBe('{"n":1.5,"s":"t"}');
    expect(canonicalJson('"text"')).toBe('"text"');
    expect(canonicalJson('not json')).toBe('not json');
    expect(canonicalJson('{"a": 1')).toBe('{"a": 1');
  });

  it('checks a stream shape for ClickHouse, naming what is wrong', () => {
    const columns = [
      { name: 'a', type: 'text' },
      { name: '_raw', type: 'jsonb' },
      { name: '_synced_at', type: 'timestamp with time zone' },
    ];
    const shape = (key: string[], cols = columns) => ({
      table: 't',
      kind: 'stream' as const,
      columns: cols,
      key,
    });
    expect(messageOf(() => checkStreamShape(shape([])))).toBe(
      'stream table t must have one key column for ClickHouse',
    );
    expect(messageOf(() => checkStreamShape(shape(['a-b'])))).toBe('invalid column name a-b');
    expect(messageOf(() => checkStreamShape(shape(['a'], columns.slice(0, 2))))).toBe(
      'stream table t must have _raw and _synced_at',
    );
    expect(messageOf(() => checkStreamShape(shape(['a'], [columns[0]!, columns[2]!])))).toBe(
      'stream table t must have _raw and _synced_at',
    );
    expect(checkStreamShape(shape(['a']))).toBe('a');
    expect(checkStreamShape(shape(['_raw'], [columns[2]!, columns[1]!]))).toBe('_raw');
  });
});
