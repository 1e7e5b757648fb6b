import { createCipheriv, randomBytes } from 'node:crypto';
import { CredentialCipher, unreadableFix } from './credential-cipher';

const key = randomBytes(32);
const cipher = new CredentialCipher(`k1:${key.toString('base64')}`);
const appId = '7d3c1d2e-5f5a-4d7e-9d0b-3a1f2c4b5e6f';

/**
 * What a forger with write access to the row could store: an IV and only the first `tagBytes`
 * of a genuine GCM tag. For an empty plaintext that prefix is all GCM checks when the tag
 * length is not pinned, so such a blob authenticates after at most 2^(8·tagBytes) guesses.
 */
function truncatedTagBlob(tagBytes: number): string {
  const iv = randomBytes(12);
  const gcm = createCipheriv('aes-256-gcm', key, iv);
  gcm.setAAD(Buffer.from(appId, 'utf8'));
  gcm.final();
  return Buffer.concat([iv, gcm.getAuthTag().subarray(0, tagBytes)]).toString('base64');
}

describe('CredentialCipher (AES-256-GCM)', () => {
  it('opens what it sealed, bound to the app id', () => {
    const sealed = cipher.seal({ apiKey: 'sk_live_1' }, appId);
    expect(cipher.open(sealed, appId)).toEqual({ apiKey: 'sk_live_1' });
    expect(() => cipher.open(sealed, 'another-app')).toThrow(
      expect.objectContaining({ status: 503, code: 'credentials_unreadable' }),
    );
  });

  it.each([4, 8, 12, 15])('refuses a %i-byte authentication tag', (tagBytes) => {
    expect(() => cipher.open({ keyId: 'k1', ciphertext: truncatedTagBlob(tagBytes) }, appId)).toThrow(
      /authentication tag/i,
    );
  });

  it('refuses a full-length tag that does not match', () => {
    const sealed = cipher.seal({ apiKey: 'sk_live_1' }, appId);
    const raw = Buffer.from(sealed.ciphertext, 'base64');
    raw[20] = (raw[20] ?? 0) ^ 1;
    expect(() => cipher.open({ ...sealed, ciphertext: raw.toString('base64') }, appId)).toThrow(
      expect.objectContaining({ status: 503, code: 'credentials_unreadable' }),
    );
  });

  it('names the key that sealed credentials it cannot open, and tells its hook once per key and reason', () => {
    const told: string[] = [];
    const sealedK1 = cipher.seal({ apiKey: 'sk_live_1' }, appId);
    const other = new CredentialCipher(`k2:${randomBytes(32).toString('base64')}`, (keyId, reason) =>
      told.push(`${keyId} ${reason}`),
    );
    const anew = new CredentialCipher(`k1:${randomBytes(32).toString('base64')}`, (keyId, reason) =>
      told.push(`${keyId} ${reason}`),
    );
    for (let i = 0; i < 3; i += 1) {
      expect(() => other.open(sealedK1, appId)).toThrow(
        expect.objectContaining({
          status: 503,
          code: 'credentials_unreadable',
          message: expect.stringContaining('the encryption key that sealed them is missing'),
          details: { keyId: 'k1', reason: 'key_missing', reported: true },
        }),
      );
      expect(() => anew.open(sealedK1, appId)).toThrow(
        expect.objectContaining({
          code: 'credentials_unreadable',
          message: expect.stringContaining('key of that name is not the one that sealed them'),
          details: { keyId: 'k1', reason: 'key_differs', reported: true },
        }),
      );
    }
    expect(() => other.open({ ...sealedK1, keyId: 'k9' }, appId)).toThrow(
      expect.objectContaining({ details: expect.objectContaining({ keyId: 'k9' }) }),
    );
    expect(told).toEqual(['k1 key_missing', 'k1 key_differs', 'k9 key_missing']);
    // What it can open, it opens, and tells nothing.
    expect(other.open(other.seal({ a: 1 }, appId), appId)).toEqual({ a: 1 });
    expect(told).toHaveLength(3);
  });

  it('names the fix: the key to restore, in the variable that holds it', () => {
    expect(unreadableFix('dev1', 'key_missing')).toBe(
      'stored credentials are sealed with key dev1, which CREDENTIALS_ENCRYPTION_KEYS does not hold: add dev1:<its base64 key> to CREDENTIALS_ENCRYPTION_KEYS after the active key, or enter those credentials again',
    );
    expect(unreadableFix('dev1', 'key_differs')).toContain(
      'the dev1 of CREDENTIALS_ENCRYPTION_KEYS is another key',
    );
  });
});
