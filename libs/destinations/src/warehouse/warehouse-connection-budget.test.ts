import fc from 'fast-check';
import { poolCap, WarehouseConnectionBudgetExhausted } from './warehouse-connection-budget';
import { warehouseErrorKind } from './warehouse-errors';

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

describe('WarehouseConnectionBudgetExhausted', () => {
  it('is too_many_connections (53300), so the rows wait for a free connection', () => {
    const error = new WarehouseConnectionBudgetExhausted('wh-a', 20);
    expect(error).toBeInstanceOf(Error);
    expect(error.code).toBe('53300');
    expect(error.name).toBe('WarehouseConnectionBudgetExhausted');
    expect(error.warehouseId).toBe('wh-a');
    expect(error.message).toBe(
      "warehouse wh-a: the process's 20 warehouse connections are all held by busy pools",
    );
    expect(warehouseErrorKind(error)).toBe('unavailable');
  });
});
