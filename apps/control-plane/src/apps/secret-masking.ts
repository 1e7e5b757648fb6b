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
