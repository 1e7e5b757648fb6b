import { ConfigError, loadConfig } from '@pipeline/config';
import { parseRedisNode, redisConfigSchema, redisConnectionOf } from './redis-config';

// REDIS_CLUSTER_NODES as every service reads it (pure: no Redis).

const problemsOf = (env: Record<string, string>): readonly string[] => {
  try {
    loadConfig(redisConfigSchema, env);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  return [];
};

describe('REDIS_CLUSTER_NODES', () => {
  it('is unset by default: the single server of REDIS_URL', () => {
    const config = loadConfig(redisConfigSchema, {});
    expect(config).toEqual({ REDIS_URL: 'redis://127.0.0.1:6379' });
    expect(redisConnectionOf(config)).toEqual({ REDIS_URL: 'redis://127.0.0.1:6379' });
  });

  it('parses a comma-separated seed list, and replaces REDIS_URL when set', () => {
    const config = loadConfig(redisConfigSchema, {
      REDIS_URL: 'redis://cache:6379',
      REDIS_CLUSTER_NODES: ' 10.0.0.1:7000, redis-1.internal:7001,[::1]:7002 ',
    });
    expect(config.REDIS_CLUSTER_NODES).toEqual([
      { host: '10.0.0.1', port: 7000 },
      { host: 'redis-1.internal', port: 7001 },
      { host: '::1', port: 7002 },
    ]);
    expect(redisConnectionOf(config)).toEqual({ REDIS_CLUSTER_NODES: config.REDIS_CLUSTER_NODES });
  });

  it('refuses what is not host:port, naming the variable and the item', () => {
    for (const bad of ['10.0.0.1', '10.0.0.1:0', 'a:70000', 'redis://a:1', ',', 'a b:1']) {
      const problems = problemsOf({ REDIS_CLUSTER_NODES: bad });
      expect(problems).toHaveLength(1);
      expect(problems[0]).toMatch(/^REDIS_CLUSTER_NODES/);
    }
    expect(problemsOf({ REDIS_CLUSTER_NODES: 'a:1,b' })[0]).toContain('"b"');
  });

  it('names no Redis when neither setting is given', () => {
    expect(redisConnectionOf({})).toBeNull();
    expect(redisConnectionOf({ REDIS_CLUSTER_NODES: [] })).toBeNull();
    expect(redisConnectionOf({ REDIS_URL: 'redis://a:1', REDIS_CLUSTER_NODES: [] })).toEqual({
      REDIS_URL: 'redis://a:1',
    });
  });

  it('reads a node as host and port', () => {
    expect(parseRedisNode('127.0.0.1:7101')).toEqual({ host: '127.0.0.1', port: 7101 });
    expect(parseRedisNode('[2001:db8::1]:6379')).toEqual({ host: '2001:db8::1', port: 6379 });
    expect(parseRedisNode('127.0.0.1:')).toBeNull();
    expect(parseRedisNode(':7101')).toBeNull();
  });
});
