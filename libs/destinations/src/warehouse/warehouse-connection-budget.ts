// How a process shares its warehouse connections between warehouses: pure, so the rule is
// checked without a database.

/**
 * The pool size a warehouse opens with, given the process's budget and the connections the
 * pools already open may hold: at most the warehouse's own limit and at most half of what is
 * still free (rounded up, so the last free connection can be taken). Halving means that
 * whichever warehouse opens first, it never takes the whole budget while others may follow:
 * after k pools at least budget / 2^k stays free. 0 means the budget is used up.
 */
export function poolCap(budget: number, held: number, maxConnections: number): number {
  const free = Math.floor(budget) - held;
  if (free <= 0) return 0;
  return Math.max(1, Math.min(Math.floor(maxConnections), Math.ceil(free / 2)));
}

/**
 * Raised when a warehouse's pool cannot open because the open pools hold the whole budget and
 * none is idle: SQLSTATE 53300 (too_many_connections), so the rows are parked and retried.
 */
export class WarehouseConnectionBudgetExhausted extends Error {
  readonly code = '53300';

  constructor(
    readonly warehouseId: string,
    budget: number,
  ) {
    super(
      `warehouse ${warehouseId}: the process's ${budget} warehouse connections are all held by busy pools`,
    );
    this.name = 'WarehouseConnectionBudgetExhausted';
  }
}
