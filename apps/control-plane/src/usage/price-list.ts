import Decimal from 'decimal.js';

/** USD prices, exact decimals from configuration (docs/management-api.md, "Usage"). */
export interface PriceList {
  storagePerGbMonth: Decimal;
  queryPerTb: Decimal;
  computePerSecond: Decimal;
  syncRowsPerMillion: Decimal;
}

export const defaultPrices = {
  storagePerGbMonth: '0.023',
  queryPerTb: '5',
  computePerSecond: '0.0001',
  syncRowsPerMillion: '1',
} as const;

export function priceList(prices: Record<keyof PriceList, string>): PriceList {
  return {
    storagePerGbMonth: new Decimal(prices.storagePerGbMonth),
    queryPerTb: new Decimal(prices.queryPerTb),
    computePerSecond: new Decimal(prices.computePerSecond),
    syncRowsPerMillion: new Decimal(prices.syncRowsPerMillion),
  };
}

/** Bytes in a GB and a TB: decimal units, as cloud warehouses bill. */
export const GB = new Decimal(10).pow(9);
export const TB = new Decimal(10).pow(12);

/** Money is kept to the micro-dollar; totals add these rounded parts, so they always add up. */
export const money = (value: Decimal.Value): Decimal =>
  new Decimal(value).toDecimalPlaces(6, Decimal.ROUND_HALF_UP);

export interface DayFigures {
  storageBytes: number;
  /** False on the account's own warehouse: its storage is shown, not billed. */
  storageBilled: boolean;
  queryBytes: number;
  modelQueryBytes: number;
  computeMs: number;
  modelComputeMs: number;
  syncRows: number;
  trackingRows: number;
}

export interface DayCosts {
  storage: Decimal;
  query: Decimal;
  modelQuery: Decimal;
  compute: Decimal;
  modelCompute: Decimal;
  syncRows: Decimal;
}

/**
 * The costs of one UTC day: storage is billed per GB-month, so a day costs its size times the
 * monthly price divided by the days of that calendar month (nothing on the account's own server).
 */
export function costsOfDay(day: string, figures: DayFigures, prices: PriceList): DayCosts {
  const [year, month] = day.split('-').map(Number) as [number, number];
  const daysInMonth = new Date(Date.UTC(year, month, 0)).getUTCDate();
  const seconds = (ms: number) => new Decimal(ms).div(1000);
  return {
    storage: figures.storageBilled
      ? money(new Decimal(figures.storageBytes).div(GB).mul(prices.storagePerGbMonth).div(daysInMonth))
      : money(0),
    query: money(new Decimal(figures.queryBytes).div(TB).mul(prices.queryPerTb)),
    modelQuery: money(new Decimal(figures.modelQueryBytes).div(TB).mul(prices.queryPerTb)),
    compute: money(seconds(figures.computeMs - figures.modelComputeMs).mul(prices.computePerSecond)),
    modelCompute: money(seconds(figures.modelComputeMs).mul(prices.computePerSecond)),
    syncRows: money(
      new Decimal(figures.syncRows + figures.trackingRows).div(1_000_000).mul(prices.syncRowsPerMillion),
    ),
  };
}
