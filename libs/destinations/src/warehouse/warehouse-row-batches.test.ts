import { eventOrderOf } from './event-order';
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

const at = (time: string | null, received: string, id: string) => ({
  timestamp: time,
  received_at: received,
  message_id: id,
});

describe('mergeById', () => {
  it('keeps one row per id: the newest event’s columns, each trait from the newest event that has it', () => {
    const older = { user_id: 'u1', ...at('2026-06-01T00:00:00.000Z', '2026-06-03T00:00:00.000Z', 'm1') };
    const newer = { user_id: 'u1', ...at('2026-06-02T00:00:00.000Z', '2026-06-02T00:00:00.000Z', 'm2') };
    const rows = [
      { ...newer, context_ip: 'new', traits: { plan: 'pro' } },
      { user_id: 'u2', ...at(null, '2026-06-01T00:00:00.000Z', 'm3'), traits: { plan: 'free' } },
      { ...older, context_ip: 'old', traits: { plan: 'free', email: 'a@x.io' } },
    ];
    expect(mergeById(rows, 'user_id')).toEqual([
      {
        ...newer,
        context_ip: 'new',
        traits: { plan: 'pro', email: 'a@x.io' },
        _event_order: eventOrderOf(newer),
        _trait_orders: { plan: eventOrderOf(newer), email: eventOrderOf(older) },
      },
      {
        user_id: 'u2',
        ...at(null, '2026-06-01T00:00:00.000Z', 'm3'),
        traits: { plan: 'free' },
        _event_order: '00000000000000000.08641780272000001.m3',
        _trait_orders: {
          plan: '00000000000000000.08641780272000001.m3',
        },
      },
    ]);
  });

  it('gives the same row whatever the order of the rows', () => {
    const a = {
      group_id: 'g',
      ...at('2026-06-01T00:00:00.000Z', '2026-06-01T00:00:00.000Z', 'a'),
      traits: { plan: 'free' },
    };
    const b = {
      group_id: 'g',
      ...at('2026-06-02T00:00:00.000Z', '2026-06-01T00:00:00.000Z', 'b'),
      traits: { plan: 'pro' },
    };
    const c = {
      group_id: 'g',
      ...at('2026-06-03T00:00:00.000Z', '2026-06-01T00:00:00.000Z', 'c'),
      traits: { x: 1 },
    };
    const orders = [
      [a, b, c],
      [c, a, b],
      [b, c, a],
      [c, b, a],
    ];
    const merged = orders.map((rows) => mergeById(rows, 'group_id'));
    for (const result of merged) expect(result).toEqual(merged[0]);
    expect(merged[0]?.[0]?.traits).toEqual({ plan: 'pro', x: 1 });
    expect(merged[0]?.[0]?.message_id).toBe('c');
  });

  it('breaks equal timestamps by received_at, then by message id; the same event twice keeps the first', () => {
    const first = {
      user_id: 'u',
      ...at('2026-06-01T00:00:00.000Z', '2026-06-01T00:00:01.000Z', 'a'),
      traits: { k: 1 },
    };
    const later = {
      user_id: 'u',
      ...at('2026-06-01T00:00:00.000Z', '2026-06-01T00:00:02.000Z', 'a'),
      traits: { k: 2 },
    };
    const bigger = {
      user_id: 'u',
      ...at('2026-06-01T00:00:00.000Z', '2026-06-01T00:00:02.000Z', 'b'),
      traits: { k: 3 },
    };
    expect(mergeById([bigger, later, first], 'user_id')[0]?.traits).toEqual({ k: 3 });
    expect(mergeById([later, first], 'user_id')[0]?.traits).toEqual({ k: 2 });
    const again = { ...first, email: 'again@example.com', traits: { k: 9 } };
    expect(mergeById([{ ...first, email: 'first@example.com' }, again], 'user_id')[0]).toMatchObject({
      email: 'first@example.com',
      traits: { k: 1 },
    });
  });

  it('gives a row without traits empty ones, keeps a trait named __proto__ as a trait', () => {
    const bare = { group_id: 'g1', ...at('2026-06-01T00:00:00.000Z', '2026-06-01T00:00:00.000Z', 'm1') };
    expect(mergeById([bare], 'group_id')[0]?.traits).toEqual({});
    const proto = JSON.parse('{"__proto__": {"polluted": true}}') as Record<string, unknown>;
    const [merged] = mergeById(
      [
        { ...bare, traits: proto },
        { ...bare, message_id: 'm2', traits: null },
      ],
      'group_id',
    );
    expect(Object.keys(merged?.traits as object)).toEqual(['__proto__']);
    expect(Object.getPrototypeOf(merged?.traits)).toBe(Object.prototype);
    expect(merged?.message_id).toBe('m2');
  });

  it('does not change the rows it was given', () => {
    const first = {
      user_id: 'u1',
      ...at('2026-06-01T00:00:00.000Z', '2026-06-01T00:00:00.000Z', 'm1'),
      traits: { a: 1 },
    };
    mergeById([first, { ...first, message_id: 'm2', traits: { b: 2 } }], 'user_id');
    expect(first.traits).toEqual({ a: 1 });
    expect(Object.keys(first)).toEqual(['user_id', 'timestamp', 'received_at', 'message_id', 'traits']);
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
    const loaded = rowsToLoad(
      [
        {
          user_id: 'u1',
          ...at('2026-06-01T00:00:00.000Z', '2026-06-01T00:00:00.000Z', 'm1'),
          traits: { a: 1 },
        },
        {
          user_id: 'u1',
          ...at('2026-06-01T00:00:00.000Z', '2026-06-01T00:00:00.000Z', 'm2'),
          traits: { b: 2 },
        },
      ],
      'user_id',
    );
    expect(loaded.map((row) => [row.message_id, row.traits])).toEqual([['m2', { a: 1, b: 2 }]]);
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
