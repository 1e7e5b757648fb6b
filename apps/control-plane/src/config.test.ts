import { randomBytes } from 'node:crypto';
import { ConfigError, loadConfig } from '@pipeline/config';
import { accountLimitsOf, controlPlaneConfigSchema, maxRunningPerAccount } from './config';

const key = () => randomBytes(32).toString('base64');
const valid = { CREDENTIALS_ENCRYPTION_KEYS: `k1:${key()}`, INTERNAL_TOKEN_INGESTION: 'x'.repeat(32) };

function problems(env: Record<string, string>): string[] {
  try {
    loadConfig(controlPlaneConfigSchema, env);
  } catch (error) {
    if (error instanceof ConfigError) return [...error.problems];
    throw error;
  }
  return [];
}

describe('control plane configuration', () => {
  it('accepts rotation lists and applies defaults', () => {
    const config = loadConfig(controlPlaneConfigSchema, {
      ...valid,
      CREDENTIALS_ENCRYPTION_KEYS: `new:${key()},old:${key()}`,
    });
    expect(config).toMatchObject({ PORT: 3000, HOST: '0.0.0.0', LOG_FORMAT: 'json' });
  });

  it('limits API requests per key by default, with Redis optional', () => {
    const defaults = loadConfig(controlPlaneConfigSchema, valid);
    expect(defaults).toMatchObject({ API_RATE_LIMIT_ENABLED: true, API_RATE_LIMIT_PER_MINUTE: 600 });
    expect(defaults.REDIS_URL).toBeUndefined();
    expect(
      loadConfig(controlPlaneConfigSchema, {
        ...valid,
        API_RATE_LIMIT_ENABLED: 'false',
        API_RATE_LIMIT_PER_MINUTE: '30',
        REDIS_URL: 'redis://redis:6379',
      }),
    ).toMatchObject({
      API_RATE_LIMIT_ENABLED: false,
      API_RATE_LIMIT_PER_MINUTE: 30,
      REDIS_URL: 'redis://redis:6379',
    });
    expect(problems({ ...valid, API_RATE_LIMIT_PER_MINUTE: '0', REDIS_URL: 'http://redis' })).toEqual([
      expect.stringMatching(/^API_RATE_LIMIT_PER_MINUTE/),
      expect.stringMatching(/^REDIS_URL/),
    ]);
  });

  it('bounds the write key rate limit ceilings by what the database can store', () => {
    expect(loadConfig(controlPlaneConfigSchema, valid)).toMatchObject({
      WRITE_KEY_MAX_EVENTS_PER_SECOND: 10_000,
      WRITE_KEY_MAX_EVENTS_PER_DAY: 100_000_000,
    });
    expect(problems({ ...valid, WRITE_KEY_MAX_EVENTS_PER_DAY: String(2 ** 31) })).toEqual([
      expect.stringMatching(/^WRITE_KEY_MAX_EVENTS_PER_DAY/),
    ]);
  });

  it('caps what one account holds and runs, and refuses a cap of 0 by name', () => {
    const defaults = loadConfig(controlPlaneConfigSchema, valid);
    expect(accountLimitsOf(defaults)).toEqual({
      writeKeys: 100,
      sources: 100,
      integrations: 100,
      queuedRuns: 100,
    });
    // Unset running caps are half of the process's workers, at least 1.
    expect(defaults.JOB_MAX_RUNNING_PER_ACCOUNT).toBeUndefined();
    expect(maxRunningPerAccount(defaults.JOB_MAX_RUNNING_PER_ACCOUNT, defaults.JOB_WORKER_CONCURRENCY)).toBe(
      1,
    );
    expect(maxRunningPerAccount(undefined, 9)).toBe(4);
    expect(maxRunningPerAccount(undefined, 1)).toBe(1);
    const set = loadConfig(controlPlaneConfigSchema, {
      ...valid,
      JOB_MAX_RUNNING_PER_ACCOUNT: '3',
      TASK_RUN_MAX_RUNNING_PER_ACCOUNT: '5',
      ACCOUNT_MAX_SOURCES: '7',
    });
    expect(maxRunningPerAccount(set.JOB_MAX_RUNNING_PER_ACCOUNT, set.JOB_WORKER_CONCURRENCY)).toBe(3);
    expect(set.TASK_RUN_MAX_RUNNING_PER_ACCOUNT).toBe(5);
    expect(accountLimitsOf(set).sources).toBe(7);
    expect(problems({ ...valid, JOB_MAX_RUNNING_PER_ACCOUNT: '0', ACCOUNT_MAX_QUEUED_RUNS: 'many' })).toEqual(
      [
        expect.stringMatching(/^JOB_MAX_RUNNING_PER_ACCOUNT/),
        expect.stringMatching(/^ACCOUNT_MAX_QUEUED_RUNS/),
      ],
    );
  });

  it('names the missing secrets', () => {
    expect(problems({})).toEqual([
      expect.stringMatching(/^CREDENTIALS_ENCRYPTION_KEYS is required/),
      expect.stringMatching(/^INTERNAL_TOKEN_INGESTION is required/),
    ]);
  });

  it.each([
    ['k1:c2hvcnQ=', /must be 32 bytes/],
    ['nokeyid', /keyId:base64key/],
    [`a:${randomBytes(32).toString('base64')},a:${randomBytes(32).toString('base64')}`, /appears twice/],
  ])('rejects the encryption keys %s without echoing them', (spec, message) => {
    const [problem] = problems({ ...valid, CREDENTIALS_ENCRYPTION_KEYS: spec });
    expect(problem).toMatch(message);
    expect(problem).toMatch(/^CREDENTIALS_ENCRYPTION_KEYS=\[redacted\]/);
  });

  it('wants a service token of 32 characters or more', () => {
    expect(problems({ ...valid, INTERNAL_TOKEN_INGESTION: 'short' })).toEqual([
      expect.stringMatching(/^INTERNAL_TOKEN_INGESTION=\[redacted\]: must have at least 32/),
    ]);
  });

  it('serves the operator API on a port of its own, never PORT, and limits its wrong tokens', () => {
    expect(loadConfig(controlPlaneConfigSchema, valid)).toMatchObject({
      PORT: 3000,
      OPERATOR_PORT: 3100,
      OPERATOR_TOKEN_FAILURES_PER_MINUTE: 10,
    });
    expect(problems({ ...valid, OPERATOR_PORT: '3000' })).toEqual([
      'OPERATOR_PORT=3000: must differ from PORT (3000): the operator API never shares the public listener',
    ]);
    expect(problems({ ...valid, PORT: '8080', OPERATOR_PORT: '8080' })).toEqual([
      expect.stringMatching(/^OPERATOR_PORT=8080: must differ from PORT \(8080\)/),
    ]);
    expect(problems({ ...valid, OPERATOR_TOKEN_FAILURES_PER_MINUTE: '0' })).toEqual([
      expect.stringMatching(/^OPERATOR_TOKEN_FAILURES_PER_MINUTE/),
    ]);
  });
});
