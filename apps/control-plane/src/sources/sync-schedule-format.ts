import { invalidField } from '../http/api-errors';
import type { SyncFrequencyUnit } from './source.entity';

const bounds: Record<SyncFrequencyUnit, number> = { hours: 8760, days: 365 };

/** `every hour`, `every 6 hours`, `every day`, `every 2 days`. */
export function describeFrequency(value: number, unit: SyncFrequencyUnit): string {
  const singular = unit === 'hours' ? 'hour' : 'day';
  return value === 1 ? `every ${singular}` : `every ${value} ${unit}`;
}

export function checkFrequency(value: number, unit: SyncFrequencyUnit): void {
  if (!Number.isInteger(value) || value < 1 || value > bounds[unit]) {
    throw invalidField('body.syncFrequencyValue', `must be an integer from 1 to ${bounds[unit]} ${unit}`);
  }
}

export function isIanaTimeZone(zone: string): boolean {
  // A pre-filter (UTC passes it); Intl is the judge of the names.
  if (!/^[A-Za-z_]+(\/[A-Za-z0-9_+-]+)*$/.test(zone)) return false;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

/** Rolling windows are kept in whole days; a partial day still covers that whole day. */
export function hoursToDays(hours: number): number {
  if (!Number.isInteger(hours) || hours < 1 || hours > 8760) {
    throw invalidField('body.rollingPeriodHours', 'must be an integer from 1 to 8760');
  }
  return Math.ceil(hours / 24);
}
