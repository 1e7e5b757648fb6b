import { PREFIX_SEARCH_BUDGET, prefixInBody } from './error-handler';

// Where a field error of tsoa's sits in the body: found shallowest first, and looked for
// within a bounded number of values, however large the client's body.
describe('prefixInBody', () => {
  it('finds the shallowest object holding the key, through arrays', () => {
    const body = { role: ['a'], items: [{ other: 1 }, { name: 'x', deeper: { name: 'y' } }] };
    expect(prefixInBody(body, 'role')).toBe('');
    expect(prefixInBody(body, 'name')).toBe('.items[1]');
    expect(prefixInBody({ a: { b: { c: { target: 1 } } } }, 'target')).toBe('.a.b.c');
    expect(prefixInBody({ list: [[{ k: 1 }]] }, 'k')).toBe('.list[0][0]');
    // An own key only: Object.prototype's are no answer.
    expect(prefixInBody({ a: {} }, 'toString')).toBe('');
    expect(prefixInBody(null, 'x')).toBe('');
    expect(prefixInBody('text', 'x')).toBe('');
  });

  it('looks at no more than its budget of values in a body of hundreds of thousands', () => {
    // The shape of the body that held the control plane for seconds per error: a 150,000-item
    // array of empty objects beside a 20,000-key object, and a key that is nowhere.
    const body = {
      context: Object.fromEntries(Array.from({ length: 20_000 }, (_, i) => [`k${i}`, i])),
      batch: Array.from({ length: 150_000 }, () => ({})),
    };
    const visited = { count: 0 };
    expect(prefixInBody(body, 'missing', PREFIX_SEARCH_BUDGET, visited)).toBe('');
    expect(visited.count).toBe(PREFIX_SEARCH_BUDGET);
    const few = { count: 0 };
    expect(prefixInBody(body, 'missing', 5, few)).toBe('');
    expect(few.count).toBe(5);
    // Within the budget, a key past the wide object is still found.
    const found = { count: 0 };
    expect(
      prefixInBody({ a: Array.from({ length: 50 }, () => ({})), b: { hit: 1 } }, 'hit', 100, found),
    ).toBe('.b');
    expect(found.count).toBeLessThanOrEqual(100);
  });
});
