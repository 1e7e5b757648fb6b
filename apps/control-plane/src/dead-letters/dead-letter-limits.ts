import { DEAD_LETTER_RETENTION_MS } from '@pipeline/destinations';

/** What the dead-letter index keeps, and how often an account may replay (config, read at start). */
export interface DeadLetterLimits {
  /** DEAD_LETTER_INDEX_MAX_PER_ACCOUNT: rows one account keeps; a new one removes its least recently seen. */
  maxPerAccount: number;
  /** DEAD_LETTER_INDEX_RETENTION_DAYS: a row last seen longer ago is neither listed nor replayed, and is deleted. */
  retentionDays: number;
  /** DEAD_LETTER_REPLAYS_PER_MINUTE: replay calls one account may make in a minute. */
  replaysPerMinute: number;
}

/** The defaults: the retention is the dead-letter topics' own (30 days). */
export const defaultDeadLetterLimits: DeadLetterLimits = {
  maxPerAccount: 10_000,
  retentionDays: DEAD_LETTER_RETENTION_MS / 86_400_000,
  replaysPerMinute: 6,
};
