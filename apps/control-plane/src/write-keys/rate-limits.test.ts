import { AppError } from '@pipeline/errors';
import { checkRateLimits, defaultWriteKeyRateLimitCeilings, MAX_STORABLE_RATE_LIMIT } from './rate-limits';

// The range a tenant may set its write keys' limits in. Pure: write-keys.test.ts covers the
// API over a real database.

const ceilings = { eventsPerSecond: 100, eventsPerDay: 1000 };

function errorsOf(limits: { eventsPerSecond: number | null; eventsPerDay: number | null }) {
  try {
    checkRateLimits(limits, ceilings);
  } catch (error) {
    if (!(error instanceof AppError)) throw error;
    expect([error.status, error.code, error.message]).toEqual([
      422,
      'invalid_rate_limit',
      'The rate limits are out of range',
    ]);
    return error.details?.errors;
  }
  return undefined;
}

const perSecond = {
  path: 'body.rateLimits.eventsPerSecond',
  message: 'must be null or a whole number from 1 to 100',
};
const perDay = {
  path: 'body.rateLimits.eventsPerDay',
  message: 'must be null or a whole number from 1 to 1000',
};

describe('checkRateLimits', () => {
  it('takes whole numbers from 1 to the ceiling, and null for the default', () => {
    for (const limits of [
      { eventsPerSecond: 1, eventsPerDay: 1 },
      { eventsPerSecond: 100, eventsPerDay: 1000 },
      { eventsPerSecond: null, eventsPerDay: null },
      { eventsPerSecond: 7, eventsPerDay: null },
    ]) {
      expect(checkRateLimits(limits, ceilings)).toEqual(limits);
    }
  });

  it.each([
    [{ eventsPerSecond: 0, eventsPerDay: null }, [perSecond]],
    [{ eventsPerSecond: 101, eventsPerDay: null }, [perSecond]],
    [{ eventsPerSecond: -1, eventsPerDay: 5 }, [perSecond]],
    [{ eventsPerSecond: 1.5, eventsPerDay: 5 }, [perSecond]],
    [{ eventsPerSecond: null, eventsPerDay: 1001 }, [perDay]],
    [{ eventsPerSecond: null, eventsPerDay: 0 }, [perDay]],
    [{ eventsPerSecond: Number.NaN, eventsPerDay: Number.POSITIVE_INFINITY }, [perSecond, perDay]],
    [{ eventsPerSecond: 500, eventsPerDay: 500.5 }, [perSecond, perDay]],
  ])('refuses %j naming each field out of range', (limits, expected) => {
    expect(errorsOf(limits)).toEqual(expected);
  });

  it('checks each field against its own ceiling', () => {
    // 1000 per second is past its ceiling of 100 though within the daily one.
    expect(errorsOf({ eventsPerSecond: 1000, eventsPerDay: 100 })).toEqual([perSecond]);
  });

  it('defaults to ceilings ingestion is sized for, which the integer columns hold', () => {
    expect(defaultWriteKeyRateLimitCeilings).toEqual({ eventsPerSecond: 10_000, eventsPerDay: 100_000_000 });
    expect(MAX_STORABLE_RATE_LIMIT).toBe(2_147_483_647);
  });
});
