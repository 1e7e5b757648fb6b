type RandomSource = Partial<Pick<Crypto, 'randomUUID' | 'getRandomValues'>>;

/**
 * A UUID v4. `crypto.randomUUID` exists only in secure contexts (https, localhost), so a site
 * served over plain http gets one built from `getRandomValues`, or from Math.random in very
 * old browsers: ids must be unique, not secret.
 */
export function uuidv4(source: RandomSource | undefined = globalThis.crypto): string {
  if (source?.randomUUID) return source.randomUUID();
  const bytes = new Uint8Array(16);
  if (source?.getRandomValues) source.getRandomValues(bytes);
  else for (let i = 0; i < 16; i += 1) bytes[i] = Math.floor(Math.random() * 256);
  bytes[6] = ((bytes[6] ?? 0) & 0x0f) | 0x40;
  bytes[8] = ((bytes[8] ?? 0) & 0x3f) | 0x80;
  const hex = Array.from(bytes, (b) => (b + 0x100).toString(16).slice(1)).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
