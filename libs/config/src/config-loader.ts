import type { z } from 'zod';

/** Thrown when the environment does not satisfy a service's configuration schema. */
export class ConfigError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

export type Env = Readonly<Record<string, string | undefined>>;

/**
 * Reads the variables a schema names from the environment, once, and validates them.
 * The schema's keys are the environment variable names, so every problem names the variable.
 */
export function loadConfig<S extends z.ZodObject>(schema: S, env: Env = process.env): z.infer<S> {
  // Empty strings count as unset: `FOO= node main.js` must not turn into a zero or a blank URL.
  const input: Record<string, string> = {};
  for (const key of Object.keys(schema.shape)) {
    const value = env[key];
    if (value !== undefined && value.trim() !== '') input[key] = value.trim();
  }
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const problems = result.error.issues.map((issue) => {
    const name = issue.path.map(String).join('.') || '(environment)';
    const given = typeof issue.path[0] === 'string' ? input[issue.path[0]] : undefined;
    const missing = given === undefined;
    return missing
      ? `${name} is required: ${issue.message}`
      : `${name}=${redact(name, given)}: ${issue.message}`;
  });
  throw new ConfigError(problems);
}

/**
 * Loads configuration or stops the process: a service must never start half-configured.
 * Exit code 78 is EX_CONFIG from sysexits.h.
 */
export function loadConfigOrExit<S extends z.ZodObject>(
  service: string,
  schema: S,
  env: Env = process.env,
): z.infer<S> {
  try {
    return loadConfig(schema, env);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${service}: ${error.message}\n`);
      process.exit(78);
    }
    throw error;
  }
}

const secretName = /(SECRET|TOKEN|PASSWORD|KEY|CREDENTIAL)/i;

/** Values of secret-looking variables, and passwords inside URLs, never reach a log. */
function redact(name: string, value: string): string {
  if (secretName.test(name)) return '[redacted]';
  return value.replace(/\/\/([^:/@]+):([^@]+)@/, '//$1:[redacted]@');
}
