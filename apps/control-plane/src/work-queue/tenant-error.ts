import { randomBytes } from 'node:crypto';
import { isAppError } from '@pipeline/errors';

/** The code and message a tenant sees on a failed job, task run or `lastError`. */
export interface TenantError {
  code: string;
  message: string;
}

/**
 * A failure whose code and message the code itself wrote for tenants ("stripe answered 401",
 * "The destination app is not active"); the remote body or socket error goes in `detail`, which
 * only the logs see. Anything thrown that is not one of these (or an AppError) is internal.
 */
export class TenantFacingError extends Error {
  constructor(
    readonly code: string,
    message: string,
    /** Remote detail (a vendor's body, a socket error) for the logs; never stored for the tenant. */
    readonly detail?: string,
  ) {
    super(message);
    this.name = 'TenantFacingError';
  }
}

export const INTERNAL_ERROR_CODE = 'internal_error';

/** What a failure records for the tenant, and what only the logs get. */
export interface ClassifiedFailure {
  error: TenantError;
  /** True when the thrown text was withheld: `error` then names `reference`, the logs hold `detail`. */
  internal: boolean;
  /** For the logs only: the remote detail of a tenant-facing error, or the whole internal message. */
  detail?: string;
  stack?: string;
}

/**
 * Text that never reaches a tenant even inside a message written for them: a socket error
 * with its address (`connect ECONNREFUSED 10.0.3.7:5432`), PostgreSQL's authentication and
 * role errors (they name the database user), stack frames, and credential key ids. A match
 * turns the whole message internal; vendor statuses and the categories of network failures
 * (`stripe: connection_refused`) do not match.
 */
const INTERNAL_TEXT: readonly RegExp[] = [
  /\b(?:ECONNREFUSED|ECONNRESET|ETIMEDOUT|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH|ENETUNREACH|EPIPE)\b/,
  /password authentication failed/i,
  /\brole "[^"]*" does not exist/i,
  /\bdatabase "[^"]*" does not exist/i,
  /\bno pg_hba\.conf entry\b/i,
  /\n\s+at \S/,
  /\bkey id\b|\bsealed with key\b/i,
];

/** A short random id a tenant can quote; the log line of the failure carries the same id. */
export function newErrorReference(): string {
  return randomBytes(6).toString('hex');
}

/** The tenant's message for an internal failure, naming the reference found in the logs. */
export function internalErrorMessage(reference: string): string {
  return `An internal error occurred; reference ${reference}`;
}

/**
 * Decides what a failure shows its tenant. Pure: the reference comes from the caller.
 * AppErrors and TenantFacingErrors keep their code and message (unless the message carries
 * internal text); everything else (a database or warehouse error, a cipher's missing key id, a
 * bug) becomes `internal_error` with a message naming `reference`, its text kept for the logs.
 */
export function classifyFailure(thrown: unknown, reference: string): ClassifiedFailure {
  const stack = thrown instanceof Error ? thrown.stack : undefined;
  if ((thrown instanceof TenantFacingError || isAppError(thrown)) && !looksInternal(thrown.message)) {
    const detail = thrown instanceof TenantFacingError ? thrown.detail : undefined;
    return {
      error: { code: thrown.code, message: thrown.message },
      internal: false,
      ...(detail !== undefined ? { detail } : {}),
    };
  }
  return {
    error: { code: INTERNAL_ERROR_CODE, message: internalErrorMessage(reference) },
    internal: true,
    detail: thrown instanceof Error ? thrown.message : String(thrown),
    ...(stack !== undefined ? { stack } : {}),
  };
}

/** The log fields of a classified failure: what the tenant was not shown, under its reference. */
export function withheldFields(
  classified: ClassifiedFailure,
  reference: string,
): { reference?: string; detail?: string; stack?: string } {
  const { internal, detail, stack } = classified;
  return {
    ...(internal ? { reference } : {}),
    ...(detail !== undefined ? { detail } : {}),
    ...(internal && stack !== undefined ? { stack } : {}),
  };
}

function looksInternal(message: string): boolean {
  return INTERNAL_TEXT.some((pattern) => pattern.test(message));
}

/**
 * Codes stored before failures were classified, whose messages may hold raw internal text
 * (jobs recorded `internal`, task runs `step_failed`). They are shown as internal errors.
 */
const UNCLASSIFIED_CODES = new Set(['internal', 'step_failed']);

/** A stored error as the API shows it: rows recorded before classification lose their raw text. */
export function shownError<E extends { code?: string; message: string }>(
  stored: E | null | undefined,
): E | null {
  if (!stored) return null;
  if ((stored.code !== undefined && UNCLASSIFIED_CODES.has(stored.code)) || looksInternal(stored.message))
    // Only code and message change; the other fields (when, which step) stay as stored.
    return { ...stored, code: INTERNAL_ERROR_CODE, message: 'An internal error occurred' } as E;
  return stored;
}
