import { httpUrl, InvalidConfig, optionalText, regionalHost, requiredText } from './destination-settings';

function refusal(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidConfig);
    expect((error as Error).name).toBe('InvalidConfig');
    return (error as Error).message;
  }
  throw new Error('accepted');
}

describe('requiredText', () => {
  it('is the trimmed text', () => {
    expect(requiredText({ apiKey: '  k-1 ' }, 'apiKey', 'credentials')).toBe('k-1');
  });

  it.each([[undefined], [null], [''], ['   '], [42], [{}]])('refuses %p, naming the field', (value) => {
    expect(refusal(() => requiredText({ apiKey: value }, 'apiKey', 'credentials'))).toBe(
      'credentials.apiKey is required',
    );
  });
});

describe('optionalText', () => {
  it('is undefined when absent, null or empty, else the trimmed text', () => {
    expect(optionalText({}, 'appId', 'appConfig')).toBeUndefined();
    expect(optionalText({ appId: null }, 'appId', 'appConfig')).toBeUndefined();
    expect(optionalText({ appId: '' }, 'appId', 'appConfig')).toBeUndefined();
    expect(optionalText({ appId: ' a-1 ' }, 'appId', 'appConfig')).toBe('a-1');
  });

  it('refuses what is not a string', () => {
    expect(refusal(() => optionalText({ appId: 7 }, 'appId', 'appConfig'))).toBe(
      'appConfig.appId must be a string',
    );
    expect(refusal(() => optionalText({ appId: false }, 'appId', 'appConfig'))).toBe(
      'appConfig.appId must be a string',
    );
  });
});

describe('regionalHost', () => {
  const hosts = {
    default: 'https://api.example.com',
    eu: 'https://api.eu.example.com',
    in: 'https://in.example.com',
  };

  it('is the default without a region, else the region’s host', () => {
    expect(regionalHost({}, hosts)).toBe('https://api.example.com');
    expect(regionalHost({ region: 'eu' }, hosts)).toBe('https://api.eu.example.com');
    expect(regionalHost({ region: ' in ' }, hosts)).toBe('https://in.example.com');
    expect(regionalHost({ region: '' }, hosts)).toBe('https://api.example.com');
  });

  it('refuses a region the vendor does not have, naming the known ones', () => {
    expect(refusal(() => regionalHost({ region: 'us2' }, hosts))).toBe(
      'appConfig.region must be one of eu, in, not "us2"',
    );
    // The table's own names only, never what its prototype has.
    expect(refusal(() => regionalHost({ region: 'constructor' }, hosts))).toBe(
      'appConfig.region must be one of eu, in, not "constructor"',
    );
    expect(refusal(() => regionalHost({ region: 3 }, hosts))).toBe('appConfig.region must be a string');
  });
});

describe('httpUrl', () => {
  it('takes http and https URLs, dropping trailing slashes', () => {
    expect(httpUrl('https://hooks.example.com/in///', 'url')).toBe('https://hooks.example.com/in');
    expect(httpUrl('http://hooks.example.com/in', 'url')).toBe('http://hooks.example.com/in');
    expect(httpUrl('https://hooks.example.com/a/b', 'url', { httpsOnly: true })).toBe(
      'https://hooks.example.com/a/b',
    );
  });

  it('refuses what is not a URL, other schemes, http when https only, and credentials', () => {
    expect(refusal(() => httpUrl('not a url', 'the url'))).toBe('the url is not a URL');
    expect(refusal(() => httpUrl('ftp://example.com', 'the url'))).toBe('the url must be an http(s) URL');
    expect(refusal(() => httpUrl('file:///etc/passwd', 'the url'))).toBe('the url must be an http(s) URL');
    expect(refusal(() => httpUrl('http://example.com', 'the url', { httpsOnly: true }))).toBe(
      'the url must be an https URL',
    );
    expect(refusal(() => httpUrl('ftp://example.com', 'the url', { httpsOnly: true }))).toBe(
      'the url must be an https URL',
    );
    expect(refusal(() => httpUrl('https://user@example.com', 'the url'))).toBe(
      'the url must not carry credentials',
    );
    expect(refusal(() => httpUrl('https://:secret@example.com', 'the url'))).toBe(
      'the url must not carry credentials',
    );
  });
});
