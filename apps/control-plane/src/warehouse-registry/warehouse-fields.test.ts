import fc from 'fast-check';
import { defaultPortOf, fieldProblems, PASSWORD_MASK, viewOf, type NewWarehouse } from './warehouse-fields';
import type { WarehouseEntity } from './warehouse.entity';

const valid: NewWarehouse = {
  name: 'eu-2',
  host: 'wh2.internal',
  port: 5432,
  database: 'warehouse',
  user: 'loader',
  password: 'pw',
  tlsMode: 'verify-full',
  maxConnections: 10,
};

const pathsOf = (input: NewWarehouse) => fieldProblems(input).map((p) => p.path);

describe('fieldProblems by engine', () => {
  const ch: NewWarehouse = {
    ...valid,
    engine: 'clickhouse',
    port: 8123,
    database: 'analytics',
    tlsMode: 'disable',
  };

  it('takes postgres (the default) and clickhouse, and names the engines otherwise', () => {
    expect(fieldProblems({ ...valid, engine: 'postgres' })).toEqual([]);
    expect(fieldProblems(ch)).toEqual([]);
    expect(fieldProblems({ ...valid, engine: 'mysql' })).toEqual([
      { path: 'body.engine', message: 'one of postgres, clickhouse' },
    ]);
    expect(fieldProblems({ ...valid, engine: '' })).toEqual([
      { path: 'body.engine', message: 'one of postgres, clickhouse' },
    ]);
  });

  it.each(['wh-2', '1db', 'a.b', 'a`b', 'd'.repeat(64), '', 'é'])(
    'refuses the ClickHouse database %j, which PostgreSQL may take',
    (database) => {
      expect(fieldProblems({ ...ch, database })).toEqual([
        {
          path: 'body.database',
          message: 'a ClickHouse database name: letters, digits and _, 1 to 63, not starting with a digit',
        },
      ]);
    },
  );

  it('takes a ClickHouse database of 63 characters and one starting with _', () => {
    expect(fieldProblems({ ...ch, database: `d${'1'.repeat(62)}` })).toEqual([]);
    expect(fieldProblems({ ...ch, database: '_x' })).toEqual([]);
    expect(fieldProblems({ ...valid, database: 'wh-2' })).toEqual([]);
  });

  it('defaults the port by engine and TLS', () => {
    expect([
      defaultPortOf('postgres', 'disable'),
      defaultPortOf('postgres', 'verify-full'),
      defaultPortOf(undefined, 'require'),
      defaultPortOf('clickhouse', 'disable'),
      defaultPortOf('clickhouse', 'require'),
      defaultPortOf('clickhouse', 'verify-full'),
    ]).toEqual([5432, 5432, 5432, 8123, 8443, 8443]);
  });
});

describe('fieldProblems', () => {
  it('finds nothing wrong with a complete warehouse, the connection cap defaulted', () => {
    expect(fieldProblems(valid)).toEqual([]);
    const { maxConnections: _cap, ...withoutCap } = valid;
    expect(fieldProblems(withoutCap)).toEqual([]);
    expect(fieldProblems({ ...valid, password: '' })).toEqual([]);
  });

  it.each([
    ['name', { name: '' }],
    ['name', { name: 'Upper' }],
    ['name', { name: '-leading' }],
    ['name', { name: 'a'.repeat(64) }],
    ['name', { name: 'with space' }],
    ['host', { host: '' }],
    ['host', { host: 'a/b' }],
    ['host', { host: 'h'.repeat(254) }],
    ['port', { port: 0 }],
    ['port', { port: 65536 }],
    ['port', { port: 1.5 }],
    ['database', { database: '' }],
    ['database', { database: 'd'.repeat(64) }],
    ['database', { database: 'é'.repeat(32) }],
    ['database', { database: 'a\u0000b' }],
    ['user', { user: '' }],
    ['user', { user: 'u\n' }],
    ['password', { password: 'p'.repeat(1001) }],
    ['tlsMode', { tlsMode: 'prefer' }],
    ['maxConnections', { maxConnections: 0 }],
    ['maxConnections', { maxConnections: 1001 }],
    ['maxConnections', { maxConnections: 2.5 }],
  ])('names body.%s for %j', (field, change) => {
    expect(pathsOf({ ...valid, ...change })).toEqual([`body.${field}`]);
  });

  it('accepts every boundary value', () => {
    for (const change of [
      { name: 'a' },
      { name: `a${'-'.repeat(62)}` },
      { host: 'h'.repeat(253) },
      { host: '::1' },
      { port: 1 },
      { port: 65535 },
      { database: 'd'.repeat(63) },
      { user: 'é'.repeat(31) },
      { password: 'p'.repeat(1000) },
      { tlsMode: 'disable' },
      { tlsMode: 'require' },
      { maxConnections: 1 },
      { maxConnections: 1000 },
    ])
      expect({ change, problems: fieldProblems({ ...valid, ...change }) }).toEqual({ change, problems: [] });
  });

  it('names every wrong field at once', () => {
    expect(pathsOf({ ...valid, name: '', port: 0, tlsMode: 'x' })).toEqual([
      'body.name',
      'body.port',
      'body.tlsMode',
    ]);
  });

  it('refuses any port outside 1 to 65535 and accepts any inside (generative)', () => {
    fc.assert(
      fc.property(fc.integer({ min: -100_000, max: 200_000 }), (port) => {
        const inside = port >= 1 && port <= 65535;
        expect(pathsOf({ ...valid, port })).toEqual(inside ? [] : ['body.port']);
      }),
    );
  });
});

describe('viewOf', () => {
  it('answers every field but the password, which is masked', () => {
    const entity = {
      id: 'w1',
      name: 'eu-2',
      engine: 'postgres',
      owner: 'platform',
      accountId: null,
      host: 'h',
      port: 5432,
      database: 'd',
      user: 'u',
      passwordCiphertext: 'CIPHERTEXT',
      passwordKeyId: 'k1',
      tlsMode: 'require',
      maxConnections: 4,
      isDefault: true,
      status: 'unavailable',
      statusDetail: 'refused',
      statusChangedAt: new Date('2026-01-02T03:04:05Z'),
      createdAt: new Date('2026-01-01T00:00:00Z'),
      updatedAt: new Date('2026-01-03T00:00:00Z'),
    } as WarehouseEntity;
    const view = viewOf(entity);
    expect(view).toEqual({
      id: 'w1',
      name: 'eu-2',
      engine: 'postgres',
      owner: 'platform',
      accountId: null,
      host: 'h',
      port: 5432,
      database: 'd',
      user: 'u',
      password: PASSWORD_MASK,
      tlsMode: 'require',
      maxConnections: 4,
      isDefault: true,
      status: 'unavailable',
      statusDetail: 'refused',
      statusChangedAt: '2026-01-02T03:04:05.000Z',
      createdAt: '2026-01-01T00:00:00.000Z',
    });
    expect(PASSWORD_MASK).toBe('**********');
    expect(JSON.stringify(view)).not.toMatch(/CIPHERTEXT|k1/);
  });
});
