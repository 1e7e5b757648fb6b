import { randomBytes } from 'node:crypto';
import { isAppError } from '@pipeline/errors';
import { CredentialCipher } from './credential-cipher';

// The key list an operator configures (CREDENTIAL_KEYS) and the refusals of a sealed blob that
// cannot be one of ours.

// Fixed keys: the mutation run finds tests by their names, which hold these values.
const k1 = Buffer.alloc(32, 1).toString('base64');
const k2 = Buffer.alloc(32, 2).toString('base64');

function thrown(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    // Credentials the keys cannot open: the code, and why, which names the key.
    if (isAppError(error))
      return `${error.code} ${String(error.details?.reason)} ${String(error.details?.keyId)}`;
    return error instanceof Error ? error.message : String(error);
  }
  return 'nothing thrown';
}

describe('CredentialCipher.parseKeys', () => {
  it('reads each keyId:base64key, trimmed, empty entries skipped, in order', () => {
    const keys = CredentialCipher.parseKeys(` k1:${k1} ,, k:${k2},`);
    expect([...keys.keys()]).toEqual(['k1', 'k']);
    expect(keys.get('k1')?.toString('base64')).toBe(k1);
    expect(keys.get('k')?.toString('base64')).toBe(k2);
    const long = 'a'.repeat(32);
    expect([...CredentialCipher.parseKeys(`${long}:${k1}`).keys()]).toEqual([long]);
    expect([...CredentialCipher.parseKeys(`A_b.c-9:${k1}`).keys()]).toEqual(['A_b.c-9']);
  });

  it.each([`:${k1}`, k1, 'abc', `bad id:${k1}`, `!k1:${k1}`, `${'a'.repeat(33)}:${k1}`, `k1!:${k1}`])(
    'refuses the entry %j',
    (spec) => {
      expect(thrown(() => CredentialCipher.parseKeys(spec))).toBe('each key must be keyId:base64key');
    },
  );

  it('refuses a key of another length, an id twice, and no key', () => {
    expect(thrown(() => CredentialCipher.parseKeys(`k1:${Buffer.alloc(31, 1).toString('base64')}`))).toBe(
      'key k1 must be 32 bytes (base64 of 32 random bytes)',
    );
    expect(thrown(() => CredentialCipher.parseKeys(`k1:${k1},k1:${k2}`))).toBe('key id k1 appears twice');
    expect(thrown(() => CredentialCipher.parseKeys(''))).toBe('at least one key is required');
    expect(thrown(() => CredentialCipher.parseKeys(' , '))).toBe('at least one key is required');
    expect(thrown(() => new CredentialCipher(''))).toBe('at least one key is required');
  });
});

describe('CredentialCipher', () => {
  const appId = '7d3c1d2e-5f5a-4d7e-9d0b-3a1f2c4b5e6f';

  it('seals with the first key and opens with any configured one', () => {
    const sealed = new CredentialCipher(`new:${k2},old:${k1}`).seal({ apiKey: 'a' }, appId);
    expect(sealed.keyId).toBe('new');
    const older = new CredentialCipher(`old:${k1}`).seal({ apiKey: 'b' }, appId);
    expect(new CredentialCipher(`new:${k2},old:${k1}`).open(older, appId)).toEqual({ apiKey: 'b' });
    expect(thrown(() => new CredentialCipher(`old:${k1}`).open(sealed, appId))).toBe(
      'credentials_unreadable key_missing new',
    );
  });

  it('binds the UTF-8 app id and credentials', () => {
    const cipher = new CredentialCipher(`k1:${k1}`);
    const sealed = cipher.seal({ name: 'Zoë' }, 'app-é');
    expect(cipher.open(sealed, 'app-é')).toEqual({ name: 'Zoë' });
    expect(thrown(() => cipher.open(sealed, 'app-e'))).toBe('credentials_unreadable key_differs k1');
  });

  it('refuses a blob shorter than the IV and a full tag before deciphering', () => {
    const cipher = new CredentialCipher(`k1:${k1}`);
    const blob = (bytes: number) => ({ keyId: 'k1', ciphertext: randomBytes(bytes).toString('base64') });
    for (const bytes of [0, 12, 27]) {
      expect(thrown(() => cipher.open(blob(bytes), appId))).toBe(
        'sealed credentials are truncated: the authentication tag must be 16 bytes',
      );
    }
    // IV and a whole tag, no body: deciphered, and refused as forged.
    expect(thrown(() => cipher.open(blob(28), appId))).toBe('credentials_unreadable key_differs k1');
  });
});
