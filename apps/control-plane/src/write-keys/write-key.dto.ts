export type WriteKeyState = 'active' | 'revoked';

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
}

export interface UpdateWriteKeyBody {
  /**
   * @minLength 1
   * @maxLength 200
   */
  name?: string;
  allowedOrigins?: string[];
}
