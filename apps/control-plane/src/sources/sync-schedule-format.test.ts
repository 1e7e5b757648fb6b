import { AppError } from '@pipeline/errors';
import { checkFrequency, describeFrequency, hoursToDays, isIanaTimeZone } from './sync-schedule-format';

// The schedule a tenant may set on a source. Pure: sources.test.ts covers the API over a real
// database.

function fieldError(run: () => unknown): { path: string; message: string } | undefined {
  try {
    run();
  } catch (error) {
    if (!(error instanceof AppError)) throw error;
    expect([error.status, error.code]).toEqual([400, 'validation_failed']);
    const errors = error.details?.errors as { path: string; message: string }[];
    expect(errors).toHaveLength(1);
    return errors[0];
  }
  return undefined;
}

describe('describeFrequency', () => {
  it('names one unit in the singular and more in the plural', () => {
    expect([
      describeFrequency(1, 'hours'),
      describeFrequency(6, 'hours'),
      describeFrequency(1, 'days'),
      describeFrequency(2, 'days'),
    ]).toEqual(['every hour', 'every 6 hours', 'every day', 'every 2 days']);
  });
});

describe('checkFrequency', () => {
  it('takes whole numbers from 1 to a year of the unit', () => {
    for (const [value, unit] of [
      [1, 'hours'],
      [8760, 'hours'],
      [1, 'days'],
      [365, 'days'],
    ] as const) {
      expect(fieldError(() => checkFrequency(value, unit))).toBeUndefined();
    }
  });

  it.each([
    [0, 'hours', 'must be an integer from 1 to 8760 hours'],
    [8761, 'hours', 'must be an integer from 1 to 8760 hours'],
    [1.5, 'hours', 'must be an integer from 1 to 8760 hours'],
    [366, 'days', 'must be an integer from 1 to 365 days'],
    [0, 'days', 'must be an integer from 1 to 365 days'],
    [-2, 'days', 'must be an integer from 1 to 365 days'],
  ] as const)('refuses %d %s', (value, unit, message) => {
    expect(fieldError(() => checkFrequency(value, unit))).toEqual({
      path: 'body.syncFrequencyValue',
      message,
    });
  });
});

describe('isIanaTimeZone', () => {
  it.each(['UTC', 'Europe/Berlin', 'America/Argentina/Buenos_Aires', 'Etc/GMT+5', 'Etc/GMT-14', 'GMT'])(
    'takes %s',
    (zone) => {
      expect(isIanaTimeZone(zone)).toBe(true);
    },
  );

  it.each([
    '',
    'Mars/Olympus',
    'Europe/Berlin ',
    '+02:00',
    'UTC+1',
    'Europe//Berlin',
    '../etc',
    'Europe/Berlin/',
    '1Europe/Berlin',
  ])('refuses %j', (zone) => {
    expect(isIanaTimeZone(zone)).toBe(false);
  });
});

describe('hoursToDays', () => {
  it('rounds a partial day up to a whole one', () => {
    expect([1, 23, 24, 25, 48, 49, 8760].map(hoursToDays)).toEqual([1, 1, 1, 2, 2, 3, 365]);
  });

  it.each([0, -1, 8761, 2.5])('refuses %d hours', (hours) => {
    expect(fieldError(() => hoursToDays(hours))).toEqual({
      path: 'body.rollingPeriodHours',
      message: 'must be an integer from 1 to 8760',
    });
  });
});
