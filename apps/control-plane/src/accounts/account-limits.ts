import type { EntityManager } from 'typeorm';
import { AppError } from '@pipeline/errors';

/** What an account may hold at once (ACCOUNT_MAX_*); docs/management-api.md, "Account limits". */
export interface AccountLimits {
  /** Active write keys (revoked ones do not count). */
  writeKeys: number;
  /** Sources not deleted. */
  sources: number;
  /** Integrations not deleted. */
  integrations: number;
  /** Jobs (syncs, integration runs) and task runs waiting for a worker, together. */
  queuedRuns: number;
}

export type AccountLimitName = 'write_keys' | 'sources' | 'integrations' | 'queued_runs';

/**
 * Far above what one workspace of a Segment or Airbyte user holds (a write key per site or app,
 * a source per vendor account, an integration per destination and data type), low enough that
 * one account cannot fill the database or the queue for everyone.
 */
export const defaultAccountLimits: AccountLimits = {
  writeKeys: 100,
  sources: 100,
  integrations: 100,
  queuedRuns: 100,
};

const limitOf: Record<AccountLimitName, keyof AccountLimits> = {
  write_keys: 'writeKeys',
  sources: 'sources',
  integrations: 'integrations',
  queued_runs: 'queuedRuns',
};

const what: Record<AccountLimitName, { noun: string; free: string }> = {
  write_keys: { noun: 'active write keys', free: 'revoke one to create another' },
  sources: { noun: 'sources', free: 'delete one to create another' },
  integrations: { noun: 'integrations', free: 'delete one to create another' },
  queued_runs: { noun: 'queued runs', free: 'try again when some have started' },
};

/** How many of a kind the account holds now (the queries run under the account's lock). */
const countOf: Record<AccountLimitName, string> = {
  write_keys: 'SELECT count(*)::int AS n FROM write_keys WHERE account_id = $1 AND revoked_at IS NULL',
  sources: 'SELECT count(*)::int AS n FROM sources WHERE account_id = $1 AND deleted_at IS NULL',
  integrations: 'SELECT count(*)::int AS n FROM integrations WHERE account_id = $1 AND deleted_at IS NULL',
  queued_runs: `SELECT (SELECT count(*) FROM jobs WHERE account_id = $1 AND status = 'queued')
                     + (SELECT count(*) FROM task_runs WHERE account_id = $1 AND status = 'pending') AS n`,
};

/** 409 `account_limit_reached`: which limit, and its value, in the message and in `limit`. */
export function accountLimitReached(name: AccountLimitName, maximum: number): AppError {
  return new AppError(
    409,
    'account_limit_reached',
    `This account has reached its limit of ${maximum} ${what[name].noun}; ${what[name].free}`,
    { limit: { name, maximum } },
  );
}

/**
 * Refuses one more of `name` when the account holds its limit already. Call it in the
 * transaction that creates the item.
 *
 * Write keys, sources and integrations are created by one request each: a transaction-scoped
 * advisory lock of (limit, account) is held while counting, so two creates at once cannot both
 * take the last slot. Queued runs are also queued by the scheduler, whose transaction holds many
 * sources' row locks; waiting there on an account lock that a request holds while it waits on one
 * of those rows would deadlock. So that count takes no lock: runs queued in the same instant may
 * pass the limit by a few, which the queue's per-account cap and fair order absorb.
 */
export class AccountLimiter {
  constructor(readonly limits: AccountLimits = defaultAccountLimits) {}

  async reserve(tx: EntityManager, accountId: string, name: AccountLimitName): Promise<void> {
    const maximum = this.limits[limitOf[name]];
    if (name !== 'queued_runs')
      await tx.query('SELECT pg_advisory_xact_lock(hashtext($1), hashtext($2::text))', [
        `account limit ${name}`,
        accountId,
      ]);
    const [row] = (await tx.query(countOf[name], [accountId])) as { n: number | string }[];
    if (Number(row?.n ?? 0) >= maximum) throw accountLimitReached(name, maximum);
  }
}
