import { STATUS_CODES } from 'node:http';

/**
 * The one error body of the management API: RFC 9457 problem details plus a stable,
 * machine-readable `code`, and the request id to quote to support.
 */
export interface Problem {
  /** `urn:pipeline:problem:<code>`. */
  type: string;
  /** The HTTP status phrase. */
  title: string;
  status: number;
  /** What went wrong, for people. */
  detail: string;
  /** Stable, machine-readable error code, e.g. `not_found`, `validation_failed`. */
  code: string;
  /** Per-field problems of a request that failed validation. */
  errors?: ProblemFieldError[];
  /** Which account limit an `account_limit_reached` refusal hit, and its value. */
  limit?: ProblemLimit;
  requestId?: string;
}

export interface ProblemLimit {
  /**
   * `write_keys`, `sources`, `integrations` or `queued_runs`; `tracking_plans`,
   * `tracking_plan_versions` or `tracking_plan_bytes` (docs/tracking-plans.md).
   */
  name: string;
  /** @isInt */
  maximum: number;
}

export interface ProblemFieldError {
  /**
   * Where the problem is, e.g. `body.schedule.frequencyValue` or `query.limit`; a JSON Pointer
   * into the submitted document for a tracking plan's or policy's problems.
   */
  path: string;
  /** The problem's own stable code, where the document's checks give one (`ref_cycle`, `schema_invalid`, ...). */
  code?: string;
  message: string;
}

export function problem(status: number, code: string, detail: string, extra: Partial<Problem> = {}): Problem {
  return {
    type: `urn:pipeline:problem:${code}`,
    title: STATUS_CODES[status] ?? 'Error',
    status,
    detail,
    code,
    ...extra,
  };
}
