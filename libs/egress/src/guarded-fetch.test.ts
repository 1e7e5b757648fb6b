import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { lookup as dnsLookup } from 'node:dns';
import { createGuardedFetch, EgressRefused, isEgressRefusal, sharedGuardedFetch } from './guarded-fetch';

interface Seen {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
}

interface TestServer {
  origin: string;
  port: number;
  seen: Seen[];
  respond: (url: string) => { status: number; headers?: Record<string, string>; body?: string };
  close(): Promise<void>;
}

async function serve(host: string): Promise<TestServer> {
  const state: TestServer = {
    origin: '',
    port: 0,
    seen: [],
    respond: () => ({ status: 200, body: 'ok' }),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      state.seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers });
      const answer = state.respond(req.url ?? '/');
      res.writeHead(answer.status, answer.headers ?? {});
      res.end(answer.body ?? '');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  state.port = (server.address() as AddressInfo).port;
  state.origin = `http://${host}:${state.port}`;
  return state;
}

/** A resolver answering fixed addresses for every name, as an attacker's DNS would. */
function fixedLookup(...addresses: string[]): typeof dnsLookup {
  return ((_hostname: string, _options: unknown, callback: (...args: unknown[]) => void) => {
    callback(
      null,
      addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })),
    );
  }) as unknown as typeof dnsLookup;
}

async function refusal(promise: Promise<unknown>): Promise<EgressRefused> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(isEgressRefusal(error)).toBe(true);
  let cause: unknown = error;
  while (!(cause instanceof EgressRefused)) cause = (cause as { cause: unknown }).cause;
  return cause;
}

describe('createGuardedFetch', () => {
  let loopback: TestServer;
  let other: TestServer;

  beforeEach(async () => {
    loopback = await serve('127.0.0.1');
    other = await serve('127.0.0.2');
  });
  afterEach(async () => {
    await loopback.close();
    await other.close();
  });

  it('refuses an IP literal in a private range before connecting', async () => {
    const guarded = createGuardedFetch();
    const refused = await refusal(guarded(`${loopback.origin}/_bulk`, { method: 'POST', body: '{}' }));
    expect(refused.address).toBe('127.0.0.1');
    expect(refused.range).toBe('loopback');
    expect(loopback.seen).toEqual([]);
  });

  it('refuses a bracketed IPv6 literal', async () => {
    const refused = await refusal(createGuardedFetch()(`http://[::1]:${loopback.port}/`));
    expect(refused.range).toBe('loopback');
  });

  it('refuses a name that resolves to an internal address', async () => {
    const refused = await refusal(createGuardedFetch()(`http://localhost:${loopback.port}/`));
    expect(refused.range).toBe('loopback');
    expect(loopback.seen).toEqual([]);
  });

  it('judges the address the socket connects to, so a rebinding answer is refused', async () => {
    // The attacker's DNS gives a public address beside the internal one: all are refused.
    const guarded = createGuardedFetch({ lookup: fixedLookup('8.8.8.8', '127.0.0.1') });
    const refused = await refusal(guarded(`http://rebind.example:${loopback.port}/`));
    expect(refused.address).toBe('127.0.0.1');
    expect(loopback.seen).toEqual([]);
  });

  it('refuses the non-global IPv6 answers a name may have, as Node prints them', async () => {
    // Node prints an IPv4-compatible answer with a dotted tail, which ipaddr.js alone reads as
    // the mapped (public) 8.8.8.8.
    for (const [answer, range] of [
      ['::8.8.8.8', 'ipv4Compatible'],
      ['64:ff9b::7f00:1', 'loopback'],
      ['2001:db8::1', 'documentation'],
      ['2002:7f00:1::1', '6to4'],
    ]) {
      const refused = await refusal(
        createGuardedFetch({ lookup: fixedLookup(answer!) })('http://v6.example/'),
      );
      expect([refused.address, refused.range]).toEqual([answer, range]);
    }
  });

  it('connects to the address its own lookup approved', async () => {
    const guarded = createGuardedFetch({
      lookup: fixedLookup('127.0.0.1'),
      allowPrivateRanges: ['127.0.0.1/32'],
    });
    const response = await guarded(`http://hooks.example:${loopback.port}/in`);
    expect(response.status).toBe(200);
    expect(await response.text()).toBe('ok');
    expect(loopback.seen.map((s) => [s.url, s.headers.host])).toEqual([
      ['/in', `hooks.example:${loopback.port}`],
    ]);
  });

  it('reaches a private address an operator allowed, and no other', async () => {
    const guarded = createGuardedFetch({ allowPrivateRanges: ['127.0.0.2/32'] });
    const response = await guarded(`${other.origin}/ok`, { method: 'POST', body: 'x' });
    expect(response.status).toBe(200);
    expect(other.seen.map((s) => s.method)).toEqual(['POST']);
    await refusal(guarded(`${loopback.origin}/`));
    expect(loopback.seen).toEqual([]);
  });

  it('checks every redirect hop of a GET again', async () => {
    other.respond = () => ({ status: 302, headers: { location: `${loopback.origin}/latest/meta-data/` } });
    const guarded = createGuardedFetch({ allowPrivateRanges: ['127.0.0.2/32'] });
    const refused = await refusal(guarded(`${other.origin}/start`));
    expect(refused.address).toBe('127.0.0.1');
    expect(other.seen.map((s) => s.url)).toEqual(['/start']);
    expect(loopback.seen).toEqual([]);
  });

  it('follows an allowed redirect and drops credentials when the origin changes', async () => {
    const second = await serve('127.0.0.2');
    try {
      other.respond = (url) =>
        url === '/start'
          ? { status: 301, headers: { location: '/same-origin' } }
          : { status: 307, headers: { location: `${second.origin}/elsewhere` } };
      const guarded = createGuardedFetch({ allowPrivateRanges: ['127.0.0.2/32'] });
      const response = await guarded(`${other.origin}/start`, {
        headers: { authorization: 'Bearer secret', 'x-shopify-access-token': 'shpat', 'user-agent': 'ua/1' },
      });
      expect(response.status).toBe(200);
      expect(other.seen.map((s) => [s.url, s.headers.authorization])).toEqual([
        ['/start', 'Bearer secret'],
        ['/same-origin', 'Bearer secret'],
      ]);
      expect(second.seen).toHaveLength(1);
      expect(second.seen[0]?.url).toBe('/elsewhere');
      expect(second.seen[0]?.headers.authorization).toBeUndefined();
      expect(second.seen[0]?.headers['x-shopify-access-token']).toBeUndefined();
      expect(second.seen[0]?.headers['user-agent']).toBe('ua/1');
    } finally {
      await second.close();
    }
  });

  it('never follows a redirect from a POST: the caller gets the 3xx', async () => {
    const second = await serve('127.0.0.2');
    try {
      other.respond = () => ({ status: 307, headers: { location: `${second.origin}/` } });
      const guarded = createGuardedFetch({ allowPrivateRanges: ['127.0.0.2/32'] });
      const response = await guarded(`${other.origin}/hook`, { method: 'POST', body: '{"a":1}' });
      expect(response.status).toBe(307);
      expect(second.seen).toEqual([]);
    } finally {
      await second.close();
    }
  });

  it('gives up after maxRedirects hops', async () => {
    other.respond = () => ({ status: 302, headers: { location: '/again' } });
    const guarded = createGuardedFetch({ allowPrivateRanges: ['127.0.0.2/32'], maxRedirects: 3 });
    const error = (await guarded(`${other.origin}/`).catch((e: unknown) => e)) as Error & { cause: Error };
    expect(error.cause.message).toBe('more than 3 redirects');
    expect(other.seen).toHaveLength(4);
  });

  it('refuses a redirect to another scheme', async () => {
    other.respond = () => ({ status: 302, headers: { location: 'file:///etc/passwd' } });
    const guarded = createGuardedFetch({ allowPrivateRanges: ['127.0.0.2/32'] });
    const error = (await guarded(`${other.origin}/`).catch((e: unknown) => e)) as Error & { cause: Error };
    expect(error.cause.message).toBe('refused the scheme file:');
  });
  it('keeps a GET with redirect: manual, and a redirect without Location, as the caller’s answer', async () => {
    const guarded = createGuardedFetch({ allowPrivateRanges: ['127.0.0.2/32'] });
    other.respond = (url) =>
      url === '/no-location' ? { status: 302 } : { status: 302, headers: { location: '/elsewhere' } };
    expect((await guarded(`${other.origin}/start`, { redirect: 'manual' })).status).toBe(302);
    expect((await guarded(`${other.origin}/no-location`)).status).toBe(302);
    expect(other.seen.map((s) => s.url)).toEqual(['/start', '/no-location']);
  });

  it('follows a HEAD like a GET, and keeps Accept and Accept-Language across origins', async () => {
    const second = await serve('127.0.0.2');
    try {
      other.respond = () => ({ status: 302, headers: { location: `${second.origin}/moved` } });
      const guarded = createGuardedFetch({ allowPrivateRanges: ['127.0.0.2/32'] });
      const response = await guarded(`${other.origin}/`, {
        method: 'HEAD',
        headers: { accept: 'application/json', 'accept-language': 'fr', cookie: 'a=b' },
      });
      expect(response.status).toBe(200);
      expect(second.seen.map((s) => [s.method, s.url])).toEqual([['HEAD', '/moved']]);
      expect(second.seen[0]?.headers.accept).toBe('application/json');
      expect(second.seen[0]?.headers['accept-language']).toBe('fr');
      expect(second.seen[0]?.headers.cookie).toBeUndefined();
    } finally {
      await second.close();
    }
  });

  it('checks https URLs the same way (the scheme is allowed, the address is not)', async () => {
    const refused = await refusal(createGuardedFetch()(`https://127.0.0.1:${loopback.port}/`));
    expect(refused.range).toBe('loopback');
  });

  it('passes a resolver’s failure on, and treats no address as not found', async () => {
    const failing = ((_h: string, _o: unknown, callback: (...args: unknown[]) => void) =>
      callback(
        Object.assign(new Error('queryA ESERVFAIL'), { code: 'ESERVFAIL' }),
      )) as unknown as typeof dnsLookup;
    const error = (await createGuardedFetch({ lookup: failing })('http://x.example/').catch(
      (e: unknown) => e,
    )) as {
      cause: { code: string };
    };
    expect(error.cause.code).toBe('ESERVFAIL');
    const empty = (await createGuardedFetch({ lookup: fixedLookup() })('http://x.example/').catch(
      (e: unknown) => e,
    )) as { cause: { code: string; message: string } };
    expect(empty.cause).toMatchObject({ code: 'ENOTFOUND', message: 'no address for x.example' });
  });

  it('shares one guarded fetch per set of ranges, in any order', () => {
    const a = sharedGuardedFetch(['10.0.0.0/8', '127.0.0.2/32']);
    expect(sharedGuardedFetch(['127.0.0.2/32', '10.0.0.0/8'])).toBe(a);
    expect(sharedGuardedFetch(['10.0.0.0/8'])).not.toBe(a);
    expect(sharedGuardedFetch()).toBe(sharedGuardedFetch([]));
  });

  it('the shared fetch applies its ranges', async () => {
    await refusal(sharedGuardedFetch()(`${other.origin}/`));
    expect((await sharedGuardedFetch(['127.0.0.2/32'])(`${other.origin}/`)).status).toBe(200);
  });

  it('isEgressRefusal is false for other failures and for a cause that is itself', () => {
    expect(isEgressRefusal(new TypeError('fetch failed', { cause: new Error('ECONNREFUSED') }))).toBe(false);
    expect(isEgressRefusal(null)).toBe(false);
    const selfCaused = Object.assign(new Error('loop'), {}) as Error & { cause?: unknown };
    selfCaused.cause = selfCaused;
    expect(isEgressRefusal(selfCaused)).toBe(false);
    expect(new EgressRefused('10.0.0.1', 'private').name).toBe('EgressRefused');
  });
});
