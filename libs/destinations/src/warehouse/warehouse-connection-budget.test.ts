import fc from 'fast-check';
import { poolCap } from './warehouse-connection-budget';

describe('poolCap', () => {
  it('takes at most the warehouse limit and half of what is free, rounded up', () => {
    expect(
      [
        [20, 0, 10],
        [20, 0, 30],
        [20, 10, 10],
        [20, 15, 10],
        [20, 19, 10],
        [20, 20, 10],
        [20, 25, 10],
        [7, 0, 10],
        [1, 0, 10],
        [20, 0, 0],
        [20, 0, 2.7],
      ].map(([budget, held, max]) => poolCap(budget!, held!, max!)),
    ).toEqual([10, 10, 5, 3, 1, 0, 0, 4, 1, 1, 2]);
  });

  it('never lets the open pools hold more than the budget, and admits a pool while one connection is free', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 500 }),
        fc.array(fc.integer({ min: 1, max: 100 }), { maxLength: 40 }),
        (budget, limits) => {
          let held = 0;
          for (const limit of limits) {
            const cap = poolCap(budget, held, limit);
            expect(cap).toBe(held < budget ? Math.min(limit, Math.ceil((budget - held) / 2)) : 0);
            held += cap;
            expect(held).toBeLessThanOrEqual(budget);
          }
        },
      ),
    );
  });
});
