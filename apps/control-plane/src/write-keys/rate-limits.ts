import { unprocessable } from '../http/api-errors';
import type { ProblemFieldError } from '../http/problem';
import type { WriteKeyRateLimits } from './write-key.dto';

/**
 * The operator's ceilings on what a tenant may set as its own per-key limits
 * (WRITE_KEY_MAX_EVENTS_PER_SECOND, WRITE_KEY_MAX_EVENTS_PER_DAY). Without them a tenant could
 * lift itself past the capacity ingestion is sized for.
 */
export interface WriteKeyRateLimitCeilings {
  eventsPerSecond: number;
  eventsPerDay: number;
}

/** The largest value the `integer` columns hold; a ceiling above it could never be stored. */
export const MAX_STORABLE_RATE_LIMIT = 2 ** 31 - 1;

export const defaultWriteKeyRateLimitCeilings: WriteKeyRateLimitCeilings = {
  eventsPerSecond: 10_000,
  eventsPerDay: 100_000_000,
};

/**
 * Null keeps ingestion's default; anything else must be a whole number from 1 to the ceiling.
 * Checked here rather than by the schema because the ceiling is configuration, and so every
 * range failure answers alike: 422 `invalid_rate_limit` naming each field.
 */
export function checkRateLimits(
  limits: WriteKeyRateLimits,
  ceilings: WriteKeyRateLimitCeilings,
): WriteKeyRateLimits {
  const errors: ProblemFieldError[] = [];
  for (const field of ['eventsPerSecond', 'eventsPerDay'] as const) {
    const value = limits[field];
    if (value === null) continue;
    const ceiling = ceilings[field];
    if (!Number.isInteger(value) || value < 1 || value > ceiling) {
      errors.push({
        path: `body.rateLimits.${field}`,
        message: `must be null or a whole number from 1 to ${ceiling}`,
      });
    }
  }
  if (errors.length > 0) {
    throw unprocessable('invalid_rate_limit', 'The rate limits are out of range', errors);
  }
  return limits;
}
