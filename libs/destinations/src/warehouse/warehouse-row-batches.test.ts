import { jsonColumns, mergeById, rowsByTable, rowsToLoad } from './warehouse-row-batches';

describe('rowsByTable', () => {
  it('groups rows per table, keeping their order', () => {
    const grouped = rowsByTable([
      { table: 'events', row: { message_id: 'm1' } },
      { table: 'users', row: { user_id: 'u1' } },
      { table: 'events', row: { message_id: 'm2' } },
    ]);
    expect([...grouped.entries()]).toEqual([
      ['events', [{ message_id: 'm1' }, { message_id: 'm2' }]],
      ['users', [{ user_id: 'u1' }]],
    ]);
  });

  it('is empty for no rows', () => {
    expect(rowsByTable([]).size).toBe(0);
  });
});

describe('mergeById', () => {
  it('keeps one row per id: the latest columns, the traits of all merged (later win)', () => {
    const rows = [
      { user_id: 'u1', message_id: 'm1', traits: { plan: 'free', email: 'a@x.io' } },
      { user_id: 'u2', message_id: 'm2', traits: { plan: 'pro' } },
      { user_id: 'u1', message_id: 'm3', traits: { plan: 'pro', name: 'Ada' } },
    ];
    expect(mergeById(rows, 'user_id')).toEqual([
      { user_id: 'u1', message_id: 'm3', traits: { plan: 'pro', email: 'a@x.io', name: 'Ada' } },
      { user_id: 'u2', message_id: 'm2', traits: { plan: 'pro' } },
    ]);
  });

  it('gives a row without traits empty ones, and keeps earlier traits when a later row has none', () => {
    expect(mergeById([{ group_id: 'g1', message_id: 'm1' }], 'group_id')).toEqual([
      { group_id: 'g1', message_id: 'm1', traits: {} },
    ]);
    expect(
      mergeById(
        [
          { group_id: 'g1', message_id: 'm1', traits: { size: 3 } },
          { group_id: 'g1', message_id: 'm2', traits: null },
        ],
        'group_id',
      ),
    ).toEqual([{ group_id: 'g1', message_id: 'm2', traits: { size: 3 } }]);
  });

  it('does not change the rows it was given', () => {
    const first = { user_id: 'u1', traits: { a: 1 } };
    mergeById([first, { user_id: 'u1', traits: { b: 2 } }], 'user_id');
    expect(first).toEqual({ user_id: 'u1', traits: { a: 1 } });
  });
});

describe('rowsToLoad', () => {
  it('keeps every row of a table keyed by message (duplicates are skipped by the load)', () => {
    const rows = [
      { message_id: 'm1', user_id: 'u1' },
      { message_id: 'm1', user_id: 'u1' },
    ];
    expect(rowsToLoad(rows, 'message_id')).toBe(rows);
  });

  it('merges the rows of a table keyed by id', () => {
    expect(
      rowsToLoad(
        [
          { user_id: 'u1', traits: { a: 1 } },
          { user_id: 'u1', traits: { b: 2 } },
        ],
        'user_id',
      ),
    ).toEqual([{ user_id: 'u1', traits: { a: 1, b: 2 } }]);
  });
});

describe('jsonColumns', () => {
  it('names the jsonb columns only', () => {
    expect([...jsonColumns({ message_id: 'text', traits: 'jsonb', n: 'integer', extra: 'jsonb' })]).toEqual([
      'traits',
      'extra',
    ]);
  });
});
