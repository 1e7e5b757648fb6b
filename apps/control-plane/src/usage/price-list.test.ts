import { costsOfDay, priceList, type DayFigures } from './price-list';

const prices = priceList({
  storagePerGbMonth: '30',
  queryPerTb: '5',
  computePerSecond: '0.5',
  syncRowsPerMillion: '2',
});
const figures = (over: Partial<DayFigures>): DayFigures => ({
  storageBytes: 0,
  storageBilled: true,
  queryBytes: 0,
  modelQueryBytes: 0,
  computeMs: 0,
  modelComputeMs: 0,
  syncRows: 0,
  trackingRows: 0,
  ...over,
});

describe('costsOfDay', () => {
  it('bills storage per GB-month over the days of that month', () => {
    // 2 GB for a day of a 30-day month at $30 per GB-month: $2.
    expect(costsOfDay('2026-11-15', figures({ storageBytes: 2e9 }), prices).storage.toFixed()).toBe('2');
    // February 2028 has 29 days.
    expect(costsOfDay('2028-02-01', figures({ storageBytes: 29e9 }), prices).storage.toFixed()).toBe('30');
  });

  it('bills no storage on the account’s own warehouse, whatever its size, and the rest as usual', () => {
    const costs = costsOfDay(
      '2026-11-15',
      figures({ storageBytes: 2e9, storageBilled: false, queryBytes: 1e12, syncRows: 1e6 }),
      prices,
    );
    expect([costs.storage.toFixed(), costs.query.toFixed(), costs.syncRows.toFixed()]).toEqual([
      '0',
      '5',
      '2',
    ]);
  });
});
