import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

const IV_LENGTH = 12;
const TAG_LENGTH = 16;

export interface SealedCredentials {
  /** base64 of iv (12 bytes) | tag (16 bytes) | ciphertext. */
  ciphertext: string;
  /** Which key sealed it, so keys can rotate: new writes use the first key, reads any. */
  keyId: string;
}

/**
 * AES-256-GCM for app credentials at rest. The app id is bound in as associated data, so a
 * ciphertext copied onto another row does not decrypt.
 */
export class CredentialCipher {
  private readonly keys: Map<string, Buffer>;
  private readonly activeKeyId: string;
  private readonly activeKey: Buffer;

  /** `spec`: `keyId:base64key[,keyId:base64key...]`, 32-byte keys, the first one active. */
  static parseKeys(spec: string): Map<string, Buffer> {
    const keys = new Map<string, Buffer>();
    for (const entry of spec
      .split(',')
      .map((e) => e.trim())
      .filter(Boolean)) {
      const separator = entry.indexOf(':');
      const id = entry.slice(0, separator);
      const key = Buffer.from(entry.slice(separator + 1), 'base64');
      if (separator < 1 || !/^[A-Za-z0-9_.-]{1,32}$/.test(id))
        throw new Error('each key must be keyId:base64key');
      if (key.length !== 32) throw new Error(`key ${id} must be 32 bytes (base64 of 32 random bytes)`);
      if (keys.has(id)) throw new Error(`key id ${id} appears twice`);
      keys.set(id, key);
    }
    if (keys.size === 0) throw new Error('at least one key is required');
    return keys;
  }

  constructor(spec: string) {
    this.keys = CredentialCipher.parseKeys(spec);
    const [active] = this.keys;
    if (!active) throw new Error('at least one key is required');
    [this.activeKeyId, this.activeKey] = active;
  }

  seal(credentials: Record<string, unknown>, associatedData: string): SealedCredentials {
    const iv = randomBytes(IV_LENGTH);
    const cipher = createCipheriv('aes-256-gcm', this.activeKey, iv, { authTagLength: TAG_LENGTH });
    cipher.setAAD(Buffer.from(associatedData, 'utf8'));
    const body = Buffer.concat([cipher.update(JSON.stringify(credentials), 'utf8'), cipher.final()]);
    return {
      ciphertext: Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64'),
      keyId: this.activeKeyId,
    };
  }

  open(sealed: SealedCredentials, associatedData: string): Record<string, unknown> {
    const key = this.keys.get(sealed.keyId);
    if (!key) throw new Error(`credentials were sealed with key ${sealed.keyId}, which is not configured`);
    const raw = Buffer.from(sealed.ciphertext, 'base64');
    // A shorter blob would hand GCM a truncated tag, which Node accepts down to 4 bytes: a
    // forger then needs about 2^32 tries instead of 2^128. Refuse it before deciphering.
    if (raw.length < IV_LENGTH + TAG_LENGTH) {
      throw new Error(`sealed credentials are truncated: the authentication tag must be ${TAG_LENGTH} bytes`);
    }
    const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, IV_LENGTH), {
      authTagLength: TAG_LENGTH,
    });
    decipher.setAAD(Buffer.from(associatedData, 'utf8'));
    decipher.setAuthTag(raw.subarray(IV_LENGTH, IV_LENGTH + TAG_LENGTH));
    const plain = Buffer.concat([decipher.update(raw.subarray(IV_LENGTH + TAG_LENGTH)), decipher.final()]);
    return JSON.parse(plain.toString('utf8')) as Record<string, unknown>;
  }
}
