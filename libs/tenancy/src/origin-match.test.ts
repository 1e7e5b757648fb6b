import { originAllowed } from './index';

describe('originAllowed', () => {
  it('matches the host or a subdomain, and nothing else', () => {
    expect(originAllowed('https://example.com', ['example.com'])).toBe(true);
    expect(originAllowed('https://shop.example.com:8443', ['example.com'])).toBe(true);
    expect(originAllowed('http://a.b.example.com', ['example.com'])).toBe(true);
    expect(originAllowed('https://badexample.com', ['example.com'])).toBe(false);
    expect(originAllowed('https://example.com.evil.io', ['example.com'])).toBe(false);
    expect(originAllowed('https://EXAMPLE.com', ['example.com'])).toBe(true);
  });

  it('refuses a missing or opaque origin when origins are listed, and allows anything when none are', () => {
    expect(originAllowed(undefined, ['example.com'])).toBe(false);
    expect(originAllowed('null', ['example.com'])).toBe(false);
    expect(originAllowed(undefined, [])).toBe(true);
    expect(originAllowed('https://anything.io', [])).toBe(true);
  });

  it('matches any one of several listed hostnames', () => {
    const allowed = ['example.com', 'shop.example.org'];
    expect(originAllowed('https://www.example.com', allowed)).toBe(true);
    expect(originAllowed('https://shop.example.org', allowed)).toBe(true);
    expect(originAllowed('https://example.org', allowed)).toBe(false);
  });
});
