import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

export interface IssuedToken {
  /** The full token: shown once, never stored. */
  token: string;
  /** Enough of the token to recognise it in a list. */
  prefix: string;
  hash: string;
}

/** A 256-bit random token with a readable kind prefix, e.g. `plk_...` for API keys. */
export function issueToken(kind: 'plk' | 'wk'): IssuedToken {
  const token = `${kind}_${randomBytes(32).toString('base64url')}`;
  return { token, prefix: token.slice(0, kind.length + 7), hash: hashToken(token) };
}

export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

export function constantTimeEqual(a: string, b: string): boolean {
  const left = createHash('sha256').update(a).digest();
  const right = createHash('sha256').update(b).digest();
  return timingSafeEqual(left, right);
}
