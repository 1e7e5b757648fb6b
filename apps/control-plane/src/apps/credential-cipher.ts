import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { credentialsUnreadable, type UnreadableReason } from '../http/api-errors';

const IV_LENGTH = 12;
const TAG_LENGTH = 16;

export interface SealedCredentials {
  /** base64 of iv (12 bytes) | tag (16 bytes) | ciphertext. */
  ciphertext: string;
  /** Which key sealed it, so keys can rotate: new writes use the first key, reads any. */
  keyId: string;
}

/**
 * What the operator does about credentials that do not open: the configuration to change,
 * for the log (the API's answer and the warehouse's status say which key, not how).
 */
export function unreadableFix(keyId: string, reason: UnreadableReason): string {
  return reason === 'key_missing'
    ? `stored credentials are sealed with key ${keyId}, which CREDENTIALS_ENCRYPTION_KEYS does not hold: add ${keyId}:<its base64 key> to CREDENTIALS_ENCRYPTION_KEYS after the active key, or enter those credentials again`
    : `stored credentials are sealed with key ${keyId}, and the ${keyId} of CREDENTIALS_ENCRYPTION_KEYS is another key (it was made anew, e.g. a new .cache/dev-secrets.env): put the original ${keyId} back, or enter those credentials again`;
}

/** Told once per key and reason the first time credentials do not open (the process logs it). */
export type OnUnreadable = (keyId: string, reason: UnreadableReason) => void;

/**
 * AES-256-GCM for app credentials at rest. The app id is bound in as associated data, so a
 * ciphertext copied onto another row does not decrypt. Credentials that the configured keys
 * cannot open throw the AppError `credentials_unreadable` (503), never a 500: the fault is the
 * configuration's, and `onUnreadable` hears of each key once, however many requests meet it.
 */
export class CredentialCipher {
  private readonly keys: Map<string, Buffer>;
  private readonly activeKeyId: string;
  private readonly activeKey: Buffer;
  private readonly reported = new Set<string>();

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

  constructor(
    spec: string,
    private readonly onUnreadable: OnUnreadable = () => undefined,
  ) {
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
    if (!key) throw this.unreadable(sealed.keyId, 'key_missing');
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
    let plain: Buffer;
    try {
      plain = Buffer.concat([decipher.update(raw.subarray(IV_LENGTH + TAG_LENGTH)), decipher.final()]);
    } catch {
      // GCM cannot tell a replaced key from an altered row or another row's ciphertext; a key
      // made anew under the same id is by far the likeliest, and the fix names it.
      throw this.unreadable(sealed.keyId, 'key_differs');
    }
    return JSON.parse(plain.toString('utf8')) as Record<string, unknown>;
  }

  private unreadable(keyId: string, reason: UnreadableReason) {
    const seen = `${reason}:${keyId}`;
    if (!this.reported.has(seen)) {
      this.reported.add(seen);
      this.onUnreadable(keyId, reason);
    }
    return credentialsUnreadable(keyId, reason);
  }
}
