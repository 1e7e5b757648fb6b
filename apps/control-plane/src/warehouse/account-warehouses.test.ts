import { warehouseConnectionOfUrl } from './account-warehouses';

// WAREHOUSE_URL becomes structured fields: the engine never sees a URL, so its parameters
// cannot redirect the connection. Pure: warehouse-unavailable.test.ts covers the engine's 503s.

describe('warehouseConnectionOfUrl', () => {
  it('takes host, port, database, user and password, decoded, and the sslmode', () => {
    expect(
      warehouseConnectionOfUrl(
        'postgres://loader:s%40cret%2F1@wh.internal:6543/analytics%20db?sslmode=verify-full&options=-c%20x',
        'default',
        7,
      ),
    ).toEqual({
      warehouseId: 'default',
      engine: 'postgres',
      host: 'wh.internal',
      port: 6543,
      database: 'analytics db',
      user: 'loader',
      password: 's@cret/1',
      tlsMode: 'verify-full',
      owner: 'platform',
      maxConnections: 7,
    });
  });

  it('defaults to port 5432, no TLS and ten connections', () => {
    expect(warehouseConnectionOfUrl('postgresql://u@h/db', 'w')).toMatchObject({
      port: 5432,
      password: '',
      tlsMode: 'disable',
      maxConnections: 10,
    });
    expect(warehouseConnectionOfUrl('postgres://u@h/db?sslmode=require', 'w').tlsMode).toBe('require');
  });

  it('refuses an sslmode it cannot honour, rather than connecting without it', () => {
    expect(() => warehouseConnectionOfUrl('postgres://u@h/db?sslmode=verify-ca', 'w')).toThrow(
      'unsupported sslmode verify-ca: use disable, require, verify-full',
    );
  });
});
