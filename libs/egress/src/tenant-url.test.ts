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

  it('does not wait longer than its bound for a resolver that hangs', async () => {
    // The resolver is a fake: the bound is checked on a fake clock, at the bound and one before.
    jest.useFakeTimers();
    try {
      const hanging = tenantUrlChecker({ resolve: () => new Promise(() => undefined), resolveTimeoutMs: 50 });
      let settled = false;
      const answer = hanging('https://slow.example.com/').finally(() => {
        settled = true;
      });
      await jest.advanceTimersByTimeAsync(49);
      expect(settled).toBe(false);
      await jest.advanceTimersByTimeAsync(1);
      expect(settled).toBe(true);
      expect(await answer).toBeUndefined();
    } finally {
      jest.useRealTimers();
    }
  });
});
