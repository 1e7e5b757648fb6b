import {
  assertHttpScheme,
  followsRedirects,
  headersForHop,
  isRedirect,
  redirectTarget,
} from './redirect-policy';

/** The cause's message of what `run` throws, with the thrown error's own message. */
function failure(run: () => unknown): [string, string] {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(TypeError);
    return [(error as Error).message, ((error as Error).cause as Error).message];
  }
  throw new Error('did not throw');
}

describe('followsRedirects', () => {
  it('follows for a GET or HEAD, in any case, unless told otherwise', () => {
    expect(followsRedirects({})).toBe(true);
    expect(followsRedirects({ method: 'GET' })).toBe(true);
    expect(followsRedirects({ method: 'get' })).toBe(true);
    expect(followsRedirects({ method: 'HEAD' })).toBe(true);
    expect(followsRedirects({ method: 'head' })).toBe(true);
    expect(followsRedirects({ method: 'GET', redirect: 'follow' })).toBe(true);
  });

  it('never follows for another method, or when the caller handles redirects', () => {
    for (const method of ['POST', 'post', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'])
      expect([method, followsRedirects({ method })]).toEqual([method, false]);
    expect(followsRedirects({ redirect: 'manual' })).toBe(false);
    expect(followsRedirects({ method: 'GET', redirect: 'error' })).toBe(false);
    expect(followsRedirects({ method: 'POST', redirect: 'follow' })).toBe(false);
  });
});

describe('assertHttpScheme', () => {
  it('lets http and https through', () => {
    expect(assertHttpScheme(new URL('http://hooks.example/'))).toBeUndefined();
    expect(assertHttpScheme(new URL('https://hooks.example/'))).toBeUndefined();
  });

  it('refuses any other scheme as a failed fetch', () => {
    expect(failure(() => assertHttpScheme(new URL('file:///etc/passwd')))).toEqual([
      'fetch failed',
      'refused the scheme file:',
    ]);
    expect(failure(() => assertHttpScheme(new URL('ftp://hooks.example/')))).toEqual([
      'fetch failed',
      'refused the scheme ftp:',
    ]);
    expect(failure(() => assertHttpScheme(new URL('data:text/plain,x')))).toEqual([
      'fetch failed',
      'refused the scheme data:',
    ]);
  });
});

describe('isRedirect', () => {
  it('is a redirect status with a Location', () => {
    for (const status of [301, 302, 303, 307, 308])
      expect([status, isRedirect(status, '/next')]).toEqual([status, true]);
    expect(isRedirect(302, '')).toBe(true);
  });

  it('is not another status, or a redirect without a Location', () => {
    for (const status of [200, 204, 300, 304, 305, 306, 400, 500])
      expect([status, isRedirect(status, '/next')]).toEqual([status, false]);
    expect(isRedirect(302, null)).toBe(false);
  });
});

describe('redirectTarget', () => {
  const from = new URL('https://hooks.example/a/b?x=1');

  it('resolves the Location against the URL answered', () => {
    expect(redirectTarget('/moved', from, 0, 5).href).toBe('https://hooks.example/moved');
    expect(redirectTarget('c', from, 0, 5).href).toBe('https://hooks.example/a/c');
    expect(redirectTarget('http://other.example/x', from, 4, 5).href).toBe('http://other.example/x');
  });

  it('fails once maxRedirects hops were followed', () => {
    expect(failure(() => redirectTarget('/again', from, 5, 5))).toEqual([
      'fetch failed',
      'more than 5 redirects',
    ]);
    expect(failure(() => redirectTarget('/again', from, 3, 3))).toEqual([
      'fetch failed',
      'more than 3 redirects',
    ]);
    expect(failure(() => redirectTarget('/again', from, 0, 0))).toEqual([
      'fetch failed',
      'more than 0 redirects',
    ]);
  });
});

describe('headersForHop', () => {
  const headers = () =>
    new Headers({
      authorization: 'Bearer secret',
      cookie: 'a=b',
      'x-shopify-access-token': 'shpat',
      accept: 'application/json',
      'accept-language': 'fr',
      'user-agent': 'ua/1',
    });

  it('keeps every header on the same origin', () => {
    const sent = headers();
    expect(headersForHop(sent, new URL('https://a.example/x'), new URL('https://a.example/y?z'))).toBe(sent);
  });

  it('keeps only Accept, Accept-Language and User-Agent when the origin changes', () => {
    for (const to of ['https://b.example/x', 'http://a.example/x', 'https://a.example:8443/x'])
      expect([to, [...headersForHop(headers(), new URL('https://a.example/x'), new URL(to))]]).toEqual([
        to,
        [
          ['accept', 'application/json'],
          ['accept-language', 'fr'],
          ['user-agent', 'ua/1'],
        ],
      ]);
  });
});
