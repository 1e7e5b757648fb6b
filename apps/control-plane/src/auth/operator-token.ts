import { createHash, timingSafeEqual } from 'node:crypto';
import { AppError } from '@pipeline/errors';

export const OPERATOR_TOKEN_MIN_LENGTH = 32;

const digest = (value: string) => createHash('sha256').update(value, 'utf8').digest();

/**
 * The operator API's credential (OPERATOR_API_TOKEN): the management API's keys belong to
 * accounts, and the warehouses belong to none. Kept as a SHA-256 digest, compared in constant
 * time. Unset: the operator routes answer 404 like routes that do not exist, so a deployment
 * without the operator API shows nothing of it.
 */
export class OperatorToken {
  private readonly expected: Buffer | null;

  constructor(token: string | undefined) {
    this.expected = token ? digest(token) : null;
  }

  /** Whether OPERATOR_API_TOKEN is set: the process serves the operator listener only then. */
  get enabled(): boolean {
    return this.expected !== null;
  }

  /** Whether `authorization` carries the operator token (false while it is unset). */
  matches(authorization: string | undefined): boolean {
    if (!this.expected) return false;
    const presented = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '')?.[1];
    return presented !== undefined && timingSafeEqual(digest(presented), this.expected);
  }

  /** Throws the documented refusal unless `authorization` carries the operator token. */
  authenticate(authorization: string | undefined): { service: 'operator' } {
    if (!this.expected) throw new AppError(404, 'not_found', 'The operator API is not enabled');
    if (this.matches(authorization)) return { service: 'operator' };
    throw new AppError(401, 'invalid_operator_token', 'This endpoint needs the operator token');
  }
}
