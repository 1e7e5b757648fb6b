export type WriteKeyState = 'active' | 'revoked';

/**
 * Overrides of ingestion's shared per-key limits (defaults 100 events/s, 100,000 events/day);
 * null keeps the default. Each must be a whole number from 1 to the operator's ceiling
 * (defaults 10,000 events/s and 100,000,000 events/day); otherwise 422 `invalid_rate_limit`.
 */
export interface WriteKeyRateLimits {
  eventsPerSecond: number | null;
  eventsPerDay: number | null;
}

export interface WriteKeyView {
  /** @format uuid */
  id: string;
  name: string;
  /** The first characters of the key; the key itself is shown only at creation. */
  keyPrefix: string;
  /** The key masked, e.g. `wk_AbCdEf1…`. */
  maskedKey: string;
  /** Hostnames; the Origin of a browser request must be one of them or a subdomain. Empty: any origin. */
  allowedOrigins: string[];
  state: WriteKeyState;
  rateLimits: WriteKeyRateLimits;
  /** @format date-time */
  createdAt: string;
  /** @format date-time */
  updatedAt: string;
  /** @format date-time */
  revokedAt: string | null;
}

export interface WriteKeyCreated extends WriteKeyView {
  /** The write key. Shown once: store it now; only its hash is kept. */
  key: string;
}

export interface CreateWriteKeyBody {
  /**
   * @minLength 1
   * @maxLength 200
   */
  name: string;
  /** Hostnames or http(s) origins; stored as hostnames. */
  allowedOrigins?: string[];
  rateLimits?: WriteKeyRateLimits;
}

export interface UpdateWriteKeyBody {
  /**
   * @minLength 1
   * @maxLength 200
   */
  name?: string;
  allowedOrigins?: string[];
  rateLimits?: WriteKeyRateLimits;
}

/**
 * A rotation takes no settings: send no body, or `{}`. Any field is refused (400), as every
 * endpoint refuses fields it does not know.
 */
// eslint-disable-next-line @typescript-eslint/no-empty-object-type -- no field is the point
export interface RotateWriteKeyBody {}
