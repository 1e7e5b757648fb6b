import type { WriteKeyRecord } from '@pipeline/tenancy';

/** Resolves the write key of a request to its tenant, or throws the documented error. */
export interface WriteKeyAuthenticator {
  readonly mode: 'static' | 'hosted';
  authenticate(writeKey: string): Promise<WriteKeyRecord>;
  /** True when the key is known valid without asking anyone (the per-IP check counts only the others). */
  isKnownValid(writeKey: string): boolean;
}
