export const MASK = '**********';

const secretKey = /(secret|password|passwd|token|api[_-]?key|private|credential|auth)/i;

/** Credentials: every value masked, the field names kept so a client sees what is set. */
export function maskAll(values: Record<string, unknown>): Record<string, string> {
  return Object.fromEntries(Object.keys(values).map((key) => [key, MASK]));
}

/** Config: values under secret-looking keys masked, at any depth. */
export function maskSecretFields(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(maskSecretFields);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value).map(([key, inner]) => [
      key,
      secretKey.test(key) && inner !== null ? MASK : maskSecretFields(inner),
    ]),
  );
}

/**
 * A client that read masked config and sends it back must not overwrite the secrets with the
 * mask: where `next` holds the mask under a secret-looking key, the stored value is kept.
 */
export function keepMaskedSecrets(next: unknown, stored: unknown): unknown {
  if (Array.isArray(next)) {
    return next.map((item, i) => keepMaskedSecrets(item, Array.isArray(stored) ? stored[i] : undefined));
  }
  if (next === null || typeof next !== 'object') return next;
  const previous =
    stored !== null && typeof stored === 'object' && !Array.isArray(stored)
      ? (stored as Record<string, unknown>)
      : {};
  return Object.fromEntries(
    Object.entries(next).map(([key, value]) => [
      key,
      value === MASK && secretKey.test(key) && key in previous
        ? previous[key]
        : keepMaskedSecrets(value, previous[key]),
    ]),
  );
}
