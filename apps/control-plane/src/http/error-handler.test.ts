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
    const effort = { visited: 0, queued: 0 };
    expect(prefixInBody(body, 'missing', PREFIX_SEARCH_BUDGET, effort)).toBe('');
    expect(effort.visited).toBe(PREFIX_SEARCH_BUDGET);
    expect(effort.queued).toBeLessThanOrEqual(2 * PREFIX_SEARCH_BUDGET + 1);
    const few = { visited: 0, queued: 0 };
    expect(prefixInBody(body, 'missing', 5, few)).toBe('');
    expect(few).toEqual({ visited: 5, queued: 8 });
    // Within the budget, a key past the wide object is still found.
    const found = { visited: 0, queued: 0 };
    expect(
      prefixInBody({ a: Array.from({ length: 50 }, () => ({})), b: { hit: 1 } }, 'hit', 100, found),
    ).toBe('.b');
    expect(found.visited).toBe(3);
  });

  it('queues at most its budget of waiting values, counted from where it is', () => {
    // The root, then `wide`: while `wide` is read, six values may wait (budget 5, one past it).
    const effort = { visited: 0, queued: 0 };
    const wide = Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`k${i}`, i]));
    expect(prefixInBody({ wide }, 'missing', 5, effort)).toBe('');
    expect(effort).toEqual({ visited: 5, queued: 7 });
    const atRoot = { visited: 0, queued: 0 };
    expect(prefixInBody(wide, 'missing', 5, atRoot)).toBe('');
    expect(atRoot).toEqual({ visited: 5, queued: 6 });
  });

  it('does not spend its budget on the characters of a string', () => {
    // Breadth first: root, a, b, then c, unless the four characters of `a` were queued first.
    expect(prefixInBody({ a: 'xxxx', b: { c: { hit: 1 } } }, 'hit', 4)).toBe('.b.c');
  });
});
