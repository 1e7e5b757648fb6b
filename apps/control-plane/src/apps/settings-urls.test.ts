import { MASK } from './secret-masking';
import { enteredAgain, urlsToCheck } from './settings-urls';

// Which strings of a tenant's settings the egress policy judges, and whether credentials were
// entered again. Pure: tenant-urls.test.ts covers the API over a real database.

describe('urlsToCheck', () => {
  it('finds URL-named keys whatever their value, and schemed strings under any key, with their paths', () => {
    expect(
      urlsToCheck(
        {
          url: 'hooks.example.com/x',
          restEndpoint: 'not even a url',
          callbackURL: 'relative/path',
          name: 'plain text',
          mirror: 'ftp://files.example.com/',
          notes: 'see https://docs.example.com',
          nested: [{ callbackUrl: 'http://a.example.com' }, 'file:///etc/passwd', 'plain', 3, null],
          count: 4,
          off: null,
          flag: true,
        },
        'body.config',
      ),
    ).toEqual([
      ['body.config.url', 'hooks.example.com/x'],
      ['body.config.restEndpoint', 'not even a url'],
      ['body.config.callbackURL', 'relative/path'],
      ['body.config.mirror', 'ftp://files.example.com/'],
      ['body.config.nested[0].callbackUrl', 'http://a.example.com'],
      ['body.config.nested[1]', 'file:///etc/passwd'],
    ]);
  });

  it('takes a key only when it ends in url or endpoint, and a scheme only at the start', () => {
    expect(
      urlsToCheck(
        {
          urlPrefix: 'x',
          endpoints: 'y',
          curl: 'z',
          my_endpoint: 'w',
          text: 'a https://b.example.com',
          s: '1a://b',
        },
        'p',
      ),
    ).toEqual([
      ['p.curl', 'z'],
      ['p.my_endpoint', 'w'],
    ]);
  });

  it('judges a string at the top, and nothing in scalars and empty settings', () => {
    expect(urlsToCheck('https://a.example.com', 'body.url')).toEqual([['body.url', 'https://a.example.com']]);
    expect(urlsToCheck('a.example.com', 'body.url')).toEqual([]);
    expect(urlsToCheck(null, 'body')).toEqual([]);
    expect(urlsToCheck(undefined, 'body')).toEqual([]);
    expect(urlsToCheck(12, 'body')).toEqual([]);
    expect(urlsToCheck({}, 'body')).toEqual([]);
    expect(urlsToCheck([], 'body')).toEqual([]);
  });

  it('an array item does not inherit the key its array is under', () => {
    expect(urlsToCheck({ urls: ['a.example.com'], url: ['b.example.com'] }, 'c')).toEqual([]);
  });

  it('adds the extra origins that no URL of the settings has already', () => {
    const extra: [string, string][] = [
      ['body.config.shop', 'https://acme.myshopify.com'],
      ['body.config.other', 'https://other.example.com'],
    ];
    expect(urlsToCheck({ endpoint: 'https://acme.myshopify.com/admin/x' }, 'body.config', extra)).toEqual([
      ['body.config.endpoint', 'https://acme.myshopify.com/admin/x'],
      ['body.config.other', 'https://other.example.com'],
    ]);
    expect(urlsToCheck({}, 'body.config', extra)).toEqual(extra);
    // A found value that is no URL counts as itself.
    expect(urlsToCheck({ url: 'raw' }, 'b', [['b.x', 'raw']])).toEqual([['b.url', 'raw']]);
  });
});

describe('enteredAgain', () => {
  it('is true only for credentials that are all entered, none a mask', () => {
    expect(enteredAgain({ writeKey: 'w' })).toBe(true);
    expect(enteredAgain({ apiKey: 'k', siteId: 's' })).toBe(true);
    expect(enteredAgain({ apiKey: MASK })).toBe(false);
    expect(enteredAgain({ apiKey: 'k', siteId: MASK })).toBe(false);
    expect(enteredAgain({})).toBe(false);
    expect(enteredAgain(null)).toBe(false);
    expect(enteredAgain(undefined)).toBe(false);
  });
});
