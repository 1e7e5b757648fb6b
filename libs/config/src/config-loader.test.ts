import { z } from 'zod';
import {
  ConfigError,
  envBool,
  envEnum,
  envInt,
  envList,
  envPort,
  envUrl,
  loadConfig,
  loadConfigOrExit,
} from './index';

const schema = z.object({
  PORT: envPort(3000),
  WORKERS: envInt({ min: 1, max: 64 }),
  DEMO_MODE: envBool(false),
  DATABASE_URL: envUrl(['postgres', 'postgresql'], 'postgres://127.0.0.1:5432/app'),
  KAFKA_BROKERS: envList(['127.0.0.1:9092']),
  LOG_FORMAT: envEnum(['json', 'pretty'], 'json'),
  ADMIN_TOKEN: z.string().min(16).optional(),
});

function problemsOf(env: Record<string, string>): readonly string[] {
  try {
    loadConfig(schema, env);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('loadConfig', () => {
  it('parses values and applies defaults', () => {
    const config = loadConfig(schema, { WORKERS: '4', DEMO_MODE: 'true', KAFKA_BROKERS: 'a:1, b:2,' });
    expect(config).toEqual({
      PORT: 3000,
      WORKERS: 4,
      DEMO_MODE: true,
      DATABASE_URL: 'postgres://127.0.0.1:5432/app',
      KAFKA_BROKERS: ['a:1', 'b:2'],
      LOG_FORMAT: 'json',
    });
  });

  it('names a missing required variable', () => {
    expect(problemsOf({})).toEqual([expect.stringMatching(/^WORKERS is required/)]);
  });

  it('treats an empty value as unset', () => {
    expect(problemsOf({ WORKERS: '  ' })).toEqual([expect.stringMatching(/^WORKERS is required/)]);
    expect(loadConfig(schema, { WORKERS: '1', PORT: '' }).PORT).toBe(3000);
  });

  it('rejects malformed values, naming each variable and what it expected', () => {
    const problems = problemsOf({
      WORKERS: '12abc',
      PORT: '70000',
      DEMO_MODE: 'yes',
      DATABASE_URL: 'mysql://x',
      LOG_FORMAT: 'xml',
    });
    // Each variable once, in the schema's order, with what it expected.
    expect(problems).toEqual([
      'PORT=70000: Too big: expected number to be <=65535',
      'WORKERS=12abc: expected an integer',
      'DEMO_MODE=yes: expected true or false',
      'DATABASE_URL=mysql://x: expected a URL with scheme postgres or postgresql',
      'LOG_FORMAT=xml: expected one of json, pretty',
    ]);
  });

  it('never echoes secret values or URL passwords', () => {
    const problems = problemsOf({
      WORKERS: '1',
      ADMIN_TOKEN: 'short',
      DATABASE_URL: 'mysql://u:hunter2@h/db',
    });
    expect(problems.join('\n')).not.toContain('hunter2');
    expect(problems.join('\n')).not.toContain('short');
    expect(problems).toEqual([
      'DATABASE_URL=mysql://u:[redacted]@h/db: expected a URL with scheme postgres or postgresql',
      'ADMIN_TOKEN=[redacted]: Too small: expected string to have >=16 characters',
    ]);
  });

  it('ignores variables the schema does not name', () => {
    expect(loadConfig(schema, { WORKERS: '2', UNRELATED: 'x' })).not.toHaveProperty('UNRELATED');
  });
});

describe('loadConfigOrExit', () => {
  it('stops the process with a message naming the variable', () => {
    const exit = jest.spyOn(process, 'exit').mockImplementation((() => {
      throw new Error('exited');
    }) as never);
    const stderr = jest.spyOn(process.stderr, 'write').mockImplementation(() => true);
    try {
      expect(() => loadConfigOrExit('ingestion', schema, { WORKERS: 'many' })).toThrow('exited');
      expect(exit).toHaveBeenCalledWith(78);
      expect(String(stderr.mock.calls[0]?.[0])).toMatch(
        /^ingestion: Invalid configuration:\n {2}- WORKERS=many: expected an integer/,
      );
    } finally {
      exit.mockRestore();
      stderr.mockRestore();
    }
  });
});
