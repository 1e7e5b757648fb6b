import { ConfigError, loadConfig } from '@pipeline/config';
import { ingestionConfigSchema } from './config';

function problems(env: Record<string, string>): string[] {
  try {
    loadConfig(ingestionConfigSchema, env);
    return [];
  } catch (error) {
    if (error instanceof ConfigError) return [...error.problems];
    throw error;
  }
}

describe('ingestion configuration: exactly one auth mode', () => {
  it('static mode needs WRITE_KEY', () => {
    expect(problems({})).toEqual([expect.stringMatching(/^WRITE_KEY is required: required in static mode/)]);
    expect(loadConfig(ingestionConfigSchema, { WRITE_KEY: 'static-key-123' })).toMatchObject({
      MANAGED_AUTH_ENABLED: false,
      PORT: 3001,
      RATE_LIMIT_LOCAL_BACKSTOP_EPS: 500,
      RATE_LIMIT_EVENTS_PER_SECOND: 100,
      RATE_LIMIT_EVENTS_PER_DAY: 100000,
      AUTH_RESOLUTION_ATTEMPTS_PER_MINUTE: 60,
      WAREHOUSE_SCHEMA: 'tracking',
    });
  });

  it('hosted mode needs the control plane URL and token, and refuses WRITE_KEY', () => {
    expect(problems({ MANAGED_AUTH_ENABLED: 'true' })).toEqual([
      expect.stringMatching(/^CONTROL_PLANE_URL is required/),
      expect.stringMatching(/^INTERNAL_SERVICE_TOKEN is required/),
    ]);
    const hosted = {
      MANAGED_AUTH_ENABLED: 'true',
      CONTROL_PLANE_URL: 'http://cp:3000',
      INTERNAL_SERVICE_TOKEN: 't'.repeat(32),
    };
    expect(problems(hosted)).toEqual([]);
    expect(problems({ ...hosted, WRITE_KEY: 'static-key-123' })).toEqual([
      expect.stringMatching(/^WRITE_KEY=\[redacted\]: must not be set in hosted mode/),
    ]);
  });

  it('validates limits and the warehouse schema name', () => {
    expect(problems({ WRITE_KEY: 'static-key-123', RATE_LIMIT_EVENTS_PER_SECOND: '0' })).toHaveLength(1);
    expect(problems({ WRITE_KEY: 'static-key-123', WAREHOUSE_SCHEMA: 'Bad-Name' })).toEqual([
      expect.stringMatching(/^WAREHOUSE_SCHEMA=Bad-Name/),
    ]);
  });
});
