import { z } from 'zod';
import { ConfigError, loadConfig } from '@pipeline/config';
import { warehouseUrlField } from './warehouse-directory';
import { clickhouseSettingsOf, warehouseConfigSchema } from './warehouse-pool';

// As a service reads it: the warehouse settings and WAREHOUSE_URL, validated once at start.
const schema = z.object({
  ...warehouseConfigSchema.shape,
  WAREHOUSE_URL: warehouseUrlField('postgres://postgres@db.example:5432/analytics'),
});

const problemsOf = (env: Record<string, string>): readonly string[] => {
  try {
    loadConfig(schema, env);
    return [];
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
};

describe('the warehouse config of ClickHouse', () => {
  it('takes no cluster by default, and an empty value as unset', () => {
    expect(clickhouseSettingsOf(loadConfig(schema, {}))).toEqual({});
    expect(clickhouseSettingsOf(loadConfig(schema, { WAREHOUSE_CLICKHOUSE_CLUSTER: '  ' }))).toEqual({});
  });

  it.each(['replicated', 'prod-cluster_2', '_c', `c${'x'.repeat(127)}`])(
    'takes the cluster %s',
    (cluster) => {
      expect(clickhouseSettingsOf(loadConfig(schema, { WAREHOUSE_CLICKHOUSE_CLUSTER: cluster }))).toEqual({
        cluster,
      });
    },
  );

  it.each(['2nd', 'a b', "x'y", 'x`y', 'a.b', '-a', `c${'x'.repeat(128)}`, 'clu\u00dfter'])(
    'refuses the cluster %j, naming the variable',
    (cluster) => {
      expect(problemsOf({ WAREHOUSE_CLICKHOUSE_CLUSTER: cluster })).toEqual([
        `WAREHOUSE_CLICKHOUSE_CLUSTER=${cluster}: expected a cluster name: letters, digits, _ and -, 1 to 128 characters, starting with a letter or _`,
      ]);
    },
  );

  it('takes a ClickHouse WAREHOUSE_URL and refuses a form the parser refuses, the password redacted', () => {
    expect(
      loadConfig(schema, { WAREHOUSE_URL: 'clickhouses://u:pw@ch.example/analytics' }).WAREHOUSE_URL,
    ).toBe('clickhouses://u:pw@ch.example/analytics');
    expect(problemsOf({ WAREHOUSE_URL: 'clickhouse://u:secret@ch.example/analytics?secure=1' })).toEqual([
      'WAREHOUSE_URL=clickhouse://u:[redacted]@ch.example/analytics?secure=1: parameters not supported: a clickhouse:// URL takes none',
    ]);
    expect(problemsOf({ WAREHOUSE_URL: 'mysql://u:secret@h/d' })).toEqual([
      'WAREHOUSE_URL=mysql://u:[redacted]@h/d: must be a postgres:// or clickhouse:// (clickhouses://) URL, not mysql:',
    ]);
  });
});
