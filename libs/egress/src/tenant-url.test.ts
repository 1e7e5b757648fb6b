import { tenantUrlChecker, type ResolveAll } from './tenant-url';

/** A resolver with fixed answers, as a tenant's own DNS would give. */
const answers =
  (table: Record<string, string[]>): ResolveAll =>
  async (hostname) => {
    const found = table[hostname];
    if (!found) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    return found;
  };

describe('tenantUrlChecker', () => {
  const check = tenantUrlChecker({
    resolve: answers({
      'hooks.example.com': ['93.184.215.14', '2606:2800:21f:cb07:6820:80da:af6b:8b2c'],
      'internal.example.com': ['10.1.2.3'],
      'split.example.com': ['93.184.215.14', '169.254.169.254'],
      'compat.example.com': ['::8.8.8.8'],
    }),
  });

  it.each([
    ['https://hooks.example.com/pipeline', undefined],
    ['http://hooks.example.com:8080/x?y=1', undefined],
    // Unknown to DNS now: judged again when a request connects.
    ['https://not-yet.example.net/', undefined],
    ['https://93.184.215.14/', undefined],
    ['https://[2606:4700:4700::1111]/', undefined],
    ['not a url', 'not_a_url'],
    ['/relative/path', 'not_a_url'],
    ['file:///etc/passwd', 'scheme_not_allowed'],
    ['gopher://hooks.example.com/', 'scheme_not_allowed'],
    ['https://user:pass@hooks.example.com/', 'credentials_in_url'],
    ['https://user@hooks.example.com/', 'credentials_in_url'],
    ['https://:secret@hooks.example.com/', 'credentials_in_url'],
    ['http://127.0.0.1:3000/internal', 'address_refused'],
    ['http://0x7f.1/', 'address_refused'],
    ['http://2130706433/', 'address_refused'],
    ['http://[::1]/', 'address_refused'],
    ['http://[::ffff:169.254.169.254]/latest/meta-data', 'address_refused'],
    ['http://[::a00:1]/', 'address_refused'],
    ['http://169.254.169.254/', 'address_refused'],
    ['http://localhost:3000/', 'address_refused'],
    ['http://api.localhost./', 'address_refused'],
    ['https://internal.example.com/hook', 'address_refused'],
    ['https://split.example.com/hook', 'address_refused'],
    ['https://compat.example.com/hook', 'address_refused'],
  ])('%s: %s', async (url, expected) => {
    expect(await check(url)).toBe(expected);
  });

  it('lets an operator range through, names and literals alike', async () => {
    const operator = tenantUrlChecker({
      allowPrivateRanges: ['10.0.0.0/8', '127.0.0.0/8', '::1/128'],
      resolve: answers({ 'internal.example.com': ['10.1.2.3'] }),
    });
    expect(await operator('https://internal.example.com/')).toBeUndefined();
    expect(await operator('http://10.9.9.9/')).toBeUndefined();
    expect(await operator('http://localhost:8080/')).toBeUndefined();
    expect(await operator('http://192.168.0.1/')).toBe('address_refused');
  });

  it('refuses localhost unless both its addresses are allowed', async () => {
    const loopbackV4 = tenantUrlChecker({ allowPrivateRanges: ['127.0.0.0/8'], resolve: answers({}) });
    expect(await loopbackV4('http://localhost/')).toBe('address_refused');
    const loopbackV6 = tenantUrlChecker({ allowPrivateRanges: ['::1/128'], resolve: answers({}) });
    expect(await loopbackV6('http://localhost/')).toBe('address_refused');
    const both = tenantUrlChecker({ allowPrivateRanges: ['127.0.0.1/32', '::1/128'], resolve: answers({}) });
    expect(await both('http://sub.localhost./')).toBeUndefined();
    // Only the name itself and its subdomains: a resolver judges the rest.
    expect(await both('http://notlocalhost/')).toBeUndefined();
    expect(await both('http://localhost.example.com/')).toBeUndefined();
  });

  it('asks the resolver for the name as written, without a trailing dot', async () => {
    const asked: string[] = [];
    const recording = tenantUrlChecker({
      resolve: async (hostname) => {
        asked.push(hostname);
        return hostname === 'internal.example.com' ? ['10.1.2.3'] : ['93.184.215.14'];
      },
    });
    expect(await recording('https://internal.example.com./hook')).toBe('address_refused');
    expect(await recording('https://hooks.example.com/')).toBeUndefined();
    expect(asked).toEqual(['internal.example.com', 'hooks.example.com']);
  });

  describe('with a resolver that hangs', () => {
    beforeEach(() => jest.useFakeTimers());
    afterEach(() => jest.useRealTimers());

    /** The verdict once settled, 'pending' before. */
    const watch = (verdict: Promise<unknown>) => {
      const seen = { value: 'pending' as unknown };
      void verdict.then((value) => (seen.value = value));
      return seen;
    };

    it('passes a name after resolveTimeoutMs, and not before', async () => {
      const hanging = tenantUrlChecker({ resolve: () => new Promise(() => undefined), resolveTimeoutMs: 50 });
      const seen = watch(hanging('https://slow.example.com/'));
      await jest.advanceTimersByTimeAsync(49);
      expect(seen.value).toBe('pending');
      await jest.advanceTimersByTimeAsync(1);
      expect(seen.value).toBeUndefined();
    });

    it('waits 2 s unless told', async () => {
      const hanging = tenantUrlChecker({ resolve: () => new Promise(() => undefined) });
      const seen = watch(hanging('https://slow.example.com/'));
      await jest.advanceTimersByTimeAsync(1999);
      expect(seen.value).toBe('pending');
      await jest.advanceTimersByTimeAsync(1);
      expect(seen.value).toBeUndefined();
    });

    it('leaves no timer behind once the resolver answered', async () => {
      const quick = tenantUrlChecker({ resolve: async () => ['10.1.2.3'] });
      expect(await quick('https://internal.example.com/')).toBe('address_refused');
      expect(jest.getTimerCount()).toBe(0);
    });
  });
});
