import { createHash, timingSafeEqual } from 'node:crypto';
import type { WriteKeyRecord } from '@pipeline/tenancy';
import { ingestionErrors } from '../collect/ingestion-errors';
import type { WriteKeyAuthenticator } from './write-key-authenticator';

const digest = (value: string) => createHash('sha256').update(value).digest();

/** Static mode: one tenant, whose write key is WRITE_KEY. */
export class StaticAuthenticator implements WriteKeyAuthenticator {
  readonly mode = 'static';
  private readonly expected: Buffer;

  constructor(
    writeKey: string,
    private readonly tenant: WriteKeyRecord,
  ) {
    this.expected = digest(writeKey);
  }

  isKnownValid(writeKey: string): boolean {
    return timingSafeEqual(digest(writeKey), this.expected);
  }

  async authenticate(writeKey: string): Promise<WriteKeyRecord> {
    if (!this.isKnownValid(writeKey)) throw ingestionErrors.invalidWriteKey();
    return this.tenant;
  }
}
