import {
  columnTypeOf,
  columnValue,
  isPlainIdentifier,
  recordsPerStatement,
  typeOf,
  uniqueByKey,
  upsertStatement,
  upsertValues,
  wantedColumns,
} from './stream-table-columns';

describe('isPlainIdentifier', () => {
  it('takes plain lower-case names of at most 63 characters, nothing a quote could bend', () => {
    const names = [
      'a',
      '_x',
      'a1_b',
      `a${'b'.repeat(62)}`,
      '',
      '1a',
      'A',
      'a-b',
      'a b',
      'a"b',
      'a.b',
      `a${'b'.repeat(63)}`,
      'a\n',
    ];
    expect(names.map(isPlainIdentifier)).toEqual([
      true,
      true,
      true,
      true,
      false,
      false,
      false,
      false,
      false,
      false,
      false,
      false,
      false,
    ]);
  });
});

describe('typeOf and columnTypeOf', () => {
  it('types a field by its first value', () => {
    expect([true, 1.5, 'x', { a: 1 }, [1], null, undefined].map(typeOf)).toEqual([
      'boolean',
      'numeric',
      'text',
      'jsonb',
      'jsonb',
      undefined,
      undefined,
    ]);
  });

  it('reads an existing column’s type, text for any other', () => {
    expect(
      ['numeric', 'boolean', 'jsonb', 'text', 'integer', 'timestamp with time zone'].map(columnTypeOf),
    ).toEqual(['numeric', 'boolean', 'jsonb', 'text', 'text', 'text']);
  });
});

describe('columnValue', () => {
  it('stores what fits the column and null for what does not (the record keeps it in _raw)', () => {
    expect([columnValue('text', 'a'), columnValue('text', 5), columnValue('text', { a: 1 })]).toEqual([
      'a',
      '5',
      '{"a":1}',
    ]);
    expect(
      [3, Infinity, NaN, '12', '-1.25', '1.', '1e5', ' 1', 'x', true].map((v) => columnValue('numeric', v)),
    ).toEqual([3, null, null, '12', '-1.25', null, null, null, null, null]);
    expect([true, false, 'true', 1].map((v) => columnValue('boolean', v))).toEqual([true, false, null, null]);
    expect([['12'], { toString: () => '3' }].map((v) => columnValue('numeric', v))).toEqual([null, null]);
    expect([columnValue('jsonb', { a: [1] }), columnValue('jsonb', 'x')]).toEqual(['{"a":[1]}', '"x"']);
    expect([
      columnValue('text', null),
      columnValue('jsonb', undefined),
      columnValue('numeric', null),
    ]).toEqual([null, null, null]);
  });
});

describe('uniqueByKey', () => {
  it('keeps the last record of each key, keys compared as text', () => {
    expect(
      uniqueByKey('orders', 'id', [
        { id: 1, v: 'a' },
        { id: 2, v: 'b' },
        { id: '1', v: 'c' },
      ]),
    ).toEqual([
      { id: '1', v: 'c' },
      { id: 2, v: 'b' },
    ]);
    expect(uniqueByKey('orders', 'id', [])).toEqual([]);
  });

  it('refuses a record without its key', () => {
    expect(() => uniqueByKey('orders', 'id', [{ id: 1 }, { v: 2 }])).toThrow('a orders record has no id');
    expect(() => uniqueByKey('orders', 'id', [{ id: null }])).toThrow('a orders record has no id');
    expect(uniqueByKey('orders', 'id', [{ id: 0 }, { id: '' }])).toEqual([{ id: 0 }, { id: '' }]);
  });
});

describe('wantedColumns', () => {
  it('wants a column per plain field, typed by its first non-null value; not the key nor _ names', () => {
    const wanted = wantedColumns('id', [
      { id: 1, name: null, total: 3, _raw: 'x', 'Bad-Name': 1, tags: ['a'] },
      { id: 2, name: 'Ada', total: 'many', paid: true },
    ]);
    expect([...wanted.entries()]).toEqual([
      ['total', 'numeric'],
      ['tags', 'jsonb'],
      ['name', 'text'],
      ['paid', 'boolean'],
    ]);
  });
});

describe('upsert statements', () => {
  it('upserts on the key with numbered parameters per record, _synced_at as now()', () => {
    expect(upsertStatement('acct_1', 'orders', 'id', ['total', 'name'], 2)).toBe(
      'INSERT INTO "acct_1"."orders" ("id", "total", "name", "_raw", _synced_at) VALUES ($1, $2, $3, $4, now()), ($5, $6, $7, $8, now()) ON CONFLICT ("id") DO UPDATE SET "total" = EXCLUDED."total", "name" = EXCLUDED."name", "_raw" = EXCLUDED."_raw", _synced_at = now()',
    );
    expect(upsertStatement('s', 't', 'k', [], 1)).toBe(
      'INSERT INTO "s"."t" ("k", "_raw", _synced_at) VALUES ($1, $2, now()) ON CONFLICT ("k") DO UPDATE SET "_raw" = EXCLUDED."_raw", _synced_at = now()',
    );
  });

  it('gives a record’s key as text, its fields as their columns store them, the record as JSON', () => {
    const types = new Map([
      ['total', 'numeric' as const],
      ['paid', 'boolean' as const],
    ]);
    const record = { id: 7, total: 'n/a', paid: true, note: { a: 1 } };
    expect(upsertValues(record, 'id', ['total', 'paid', 'note'], types)).toEqual([
      '7',
      null,
      true,
      '{"a":1}',
      '{"id":7,"total":"n/a","paid":true,"note":{"a":1}}',
    ]);
  });

  it('keeps each statement under the parameter limit', () => {
    expect([
      recordsPerStatement(3),
      recordsPerStatement(60_000),
      recordsPerStatement(70_000),
      recordsPerStatement(7, 20),
    ]).toEqual([20_000, 1, 1, 2]);
  });
});
