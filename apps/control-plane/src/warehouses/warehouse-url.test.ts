import fc from 'fast-check';
import { warehouseFieldsOfUrl } from './warehouse-url';

describe('warehouseFieldsOfUrl', () => {
  it('reads every part of WAREHOUSE_URL', () => {
    expect(
      warehouseFieldsOfUrl('postgres://loader:s3cret@wh.internal:6432/events?sslmode=verify-full'),
    ).toEqual({
      host: 'wh.internal',
      port: 6432,
      database: 'events',
      user: 'loader',
      password: 's3cret',
      tlsMode: 'verify-full',
    });
  });

  it("fills libpq's defaults: port 5432, user and database postgres, no password, no TLS", () => {
    expect(warehouseFieldsOfUrl('postgresql://db.example')).toEqual({
      host: 'db.example',
      port: 5432,
      database: 'postgres',
      user: 'postgres',
      password: '',
      tlsMode: 'disable',
    });
  });

  it('takes an IPv6 host without its brackets', () => {
    expect(warehouseFieldsOfUrl('postgres://u@[::1]:5433/w').host).toBe('::1');
  });

  it.each([
    [undefined, 'disable'],
    ['disable', 'disable'],
    ['allow', 'disable'],
    ['prefer', 'disable'],
    ['require', 'require'],
    ['verify-ca', 'require'],
    ['verify-full', 'verify-full'],
  ])('stores sslmode=%s as %s', (sslmode, tlsMode) => {
    const query = sslmode ? `?sslmode=${sslmode}` : '';
    expect(warehouseFieldsOfUrl(`postgres://u@h/d${query}`).tlsMode).toBe(tlsMode);
  });

  it('decodes any user, password and database the URL encodes (generative)', () => {
    fc.assert(
      fc.property(
        fc.string({ minLength: 1, maxLength: 40 }),
        fc.string({ maxLength: 80 }),
        fc.string({ minLength: 1, maxLength: 40 }),
        (user, password, database) => {
          const url = `postgres://${encodeURIComponent(user)}:${encodeURIComponent(password)}@h:5432/${encodeURIComponent(database)}`;
          expect(warehouseFieldsOfUrl(url)).toMatchObject({ user, password, database });
        },
      ),
    );
  });
});
