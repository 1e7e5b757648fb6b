import { createCipheriv, randomBytes } from 'node:crypto';
import { CredentialCipher } from './credential-cipher';

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
    expect(() => cipher.open(sealed, 'another-app')).toThrow(/unable to authenticate/);
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
      /unable to authenticate/,
    );
  });
});
