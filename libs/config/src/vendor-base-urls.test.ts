import { z } from 'zod';
import { loadConfig } from './config-loader';
import { vendorBaseUrlFields, vendorBaseUrlsOf } from './vendor-base-urls';

describe('vendor base URLs', () => {
  const schema = z.object(vendorBaseUrlFields(['braze', 'customer_io']));

  it('reads VENDOR_BASE_URL_<APP TYPE> and hands back only the ones set, by app type', () => {
    const config = loadConfig(schema, { VENDOR_BASE_URL_CUSTOMER_IO: 'http://127.0.0.1:9000' });
    expect(vendorBaseUrlsOf(config, ['braze', 'customer_io'])).toEqual({
      customer_io: 'http://127.0.0.1:9000',
    });
  });

  it('refuses a value that is not an http(s) URL', () => {
    expect(() => loadConfig(schema, { VENDOR_BASE_URL_BRAZE: 'ftp://example.com' })).toThrow(
      /VENDOR_BASE_URL_BRAZE/,
    );
  });
});
