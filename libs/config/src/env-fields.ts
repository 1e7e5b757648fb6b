import { z } from 'zod';

// Field builders for environment variables. Every value arrives as a string; these parse it
// strictly (no "12abc" as 12, no "yes" as a boolean) and say what was expected.

export function envInt(options: { default?: number; min?: number; max?: number } = {}) {
  const { min = Number.MIN_SAFE_INTEGER, max = Number.MAX_SAFE_INTEGER } = options;
  const field = z
    .string()
    .regex(/^-?\d+$/, 'expected an integer')
    .transform(Number)
    .pipe(z.number().int().min(min).max(max));
  return options.default === undefined ? field : field.default(options.default);
}

export function envPort(defaultPort?: number) {
  return envInt({ min: 0, max: 65535, ...(defaultPort === undefined ? {} : { default: defaultPort }) });
}

export function envBool(defaultValue: boolean) {
  return z
    .enum(['true', 'false', '1', '0'], { error: 'expected true or false' })
    .transform((v) => v === 'true' || v === '1')
    .default(defaultValue);
}

export function envString(defaultValue?: string) {
  const field = z.string().min(1);
  return defaultValue === undefined ? field : field.default(defaultValue);
}

/** A URL whose scheme is one of `protocols` (without the colon). */
export function envUrl(protocols: readonly string[], defaultValue?: string) {
  const field = z.string().refine(
    (value) => {
      try {
        return protocols.includes(new URL(value).protocol.replace(/:$/, ''));
      } catch {
        return false;
      }
    },
    { message: `expected a URL with scheme ${protocols.join(' or ')}` },
  );
  return defaultValue === undefined ? field : field.default(defaultValue);
}

/** A comma-separated list with at least one non-empty item. */
export function envList(defaultValue?: readonly string[]) {
  const field = z
    .string()
    .transform((v) =>
      v
        .split(',')
        .map((item) => item.trim())
        .filter(Boolean),
    )
    .pipe(z.array(z.string()).min(1, 'expected a comma-separated list'));
  return defaultValue === undefined ? field : field.default([...defaultValue]);
}

export function envEnum<const T extends readonly [string, ...string[]]>(values: T, defaultValue: T[number]) {
  return z.enum(values, { error: `expected one of ${values.join(', ')}` }).default(defaultValue);
}
