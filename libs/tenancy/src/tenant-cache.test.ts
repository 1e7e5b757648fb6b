import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import { createLogger } from '@pipeline/logger';
import { ControlPlaneClient, ControlPlaneUnavailable } from './control-plane-client';
import { TenantCache, type TenantCacheOptions } from './tenant-cache';
import { UNSUBSCRIBED_MAX_TTL_MS } from './cache-freshness';

interface Tenant {
  accountId: string;
  writeKeyId: string;
  version: number;
}

/**
 * A control plane look-alike on a real socket: POST /internal/v1/write-keys/lookup answers the
 * tenant of a known write key id, 404 for others, or `failWith` while set. Answers wait for
 * `gate` while it is closed, so lookups can be held in flight.
 */
async function startControlPlane() {
  const tenants = new Map<string, Tenant>();
  const requests: string[] = [];
  let failWith: number | undefined;
  let gate: Promise<void> = Promise.resolve();
  let open = () => {};
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
    req.on('end', () => {
      const { writeKeyId } = JSON.parse(body) as { writeKeyId: string };
      requests.push(writeKeyId);
      void gate.then(() => {
        const tenant = tenants.get(writeKeyId);
        const status = failWith ?? (tenant ? 200 : 404);
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(status === 200 ? { data: tenant } : { code: 'x' }));
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    tenants,
    requests,
    fail: (status: number | undefined) => (failWith = status),
    hold: () => (gate = new Promise((resolve) => (open = resolve))),
    release: () => open(),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Polls `check` until true, at most `withinMs`. */
async function until(check: () => boolean, withinMs = 5000): Promise<void> {
  const deadline = Date.now() + withinMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`not within ${withinMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe('TenantCache against a control plane on a local socket', () => {
  let cp: Awaited<ReturnType<typeof startControlPlane>>;
  let client: ControlPlaneClient;
  let now: number;
  let hears: boolean;
  const logs: string[] = [];
  const stream = new PassThrough();
  stream.on('data', (chunk: Buffer) => logs.push(chunk.toString('utf8')));
  const logger = createLogger({ service: 'tenant-cache-test', stream });
  const HOUR = 3_600_000;

  beforeEach(async () => {
    cp = await startControlPlane();
    client = new ControlPlaneClient(cp.url, 'token', logger);
    cp.tenants.set('wk_a', { accountId: 'acc_1', writeKeyId: 'wk_a', version: 1 });
    cp.tenants.set('wk_b', { accountId: 'acc_1', writeKeyId: 'wk_b', version: 1 });
    cp.tenants.set('wk_c', { accountId: 'acc_2', writeKeyId: 'wk_c', version: 1 });
    now = 1_000_000;
    hears = true;
    logs.length = 0;
  });
  afterEach(() => cp.close());

  const cacheOf = (over: Partial<TenantCacheOptions> = {}) =>
    new TenantCache<Tenant>(
      (writeKeyId) => client.lookup(writeKeyId) as unknown as Promise<Tenant | null>,
      { ttlMs: HOUR, unknownTtlMs: 60_000, hearsChanges: () => hears, ...over },
      logger,
      () => now,
    );

  it('coalesces 50 concurrent lookups of one key into one control-plane request', async () => {
    const cache = cacheOf();
    cp.hold();
    const pending = Array.from({ length: 50 }, () => cache.get('wk_a', 'wk_a'));
    const others = [cache.get('wk_c', 'wk_c'), cache.get('wk_unknown', 'wk_unknown')];
    await until(() => cp.requests.length === 3);
    cp.release();
    const answers = await Promise.all(pending);
    expect(answers).toHaveLength(50);
    expect(answers.every((t) => t?.writeKeyId === 'wk_a' && t.version === 1)).toBe(true);
    expect(await Promise.all(others)).toEqual([{ accountId: 'acc_2', writeKeyId: 'wk_c', version: 1 }, null]);
    expect(cp.requests.sort()).toEqual(['wk_a', 'wk_c', 'wk_unknown']);
    expect(cache.lookups).toBe(3);
    // Then served from the cache.
    await cache.get('wk_a', 'wk_a');
    expect(cp.requests).toHaveLength(3);

    // A refresh past the TTL is shared the same way.
    now += HOUR;
    cp.tenants.set('wk_a', { accountId: 'acc_1', writeKeyId: 'wk_a', version: 2 });
    const refreshed = await Promise.all(Array.from({ length: 20 }, () => cache.get('wk_a', 'wk_a')));
    expect(refreshed.map((t) => t?.version)).toEqual(Array(20).fill(2));
    expect(cp.requests).toHaveLength(4);
  });

  it('coalesces concurrent lookups that fail: one request, every caller gets the error', async () => {
    const cache = cacheOf();
    cp.fail(503);
    const results = await Promise.allSettled(Array.from({ length: 10 }, () => cache.get('wk_a', 'wk_a')));
    expect(results).toHaveLength(10);
    expect(results.every((r) => r.status === 'rejected' && r.reason instanceof ControlPlaneUnavailable)).toBe(
      true,
    );
    expect(cp.requests).toEqual(['wk_a']);
  });

  it('serves a tenant past its TTL while the control plane errors, for staleIfErrorMs, only while changes are heard', async () => {
    const cache = cacheOf({ staleIfErrorMs: 15 * 60_000 });
    expect((await cache.get('wk_a', 'wk_a'))?.version).toBe(1);
    cp.fail(503);
    now += HOUR + 1;
    const stale = await Promise.all(Array.from({ length: 5 }, () => cache.get('wk_a', 'wk_a')));
    expect(stale.map((t) => t?.version)).toEqual([1, 1, 1, 1, 1]);
    expect(cp.requests).toEqual(['wk_a', 'wk_a']); // one lookup for the five
    expect(logs.join('')).toContain('control plane unavailable; using a cached tenant past its TTL');
    // Kept after the failure: served again on the next error, asked again each time.
    expect((await cache.get('wk_a', 'wk_a'))?.version).toBe(1);
    expect(cp.requests).toHaveLength(3);

    // Not while changes are not heard: a revocation could have been missed.
    hears = false;
    await expect(cache.get('wk_a', 'wk_a')).rejects.toBeInstanceOf(ControlPlaneUnavailable);
    hears = true;
    // Not past staleIfErrorMs.
    now += 15 * 60_000;
    await expect(cache.get('wk_a', 'wk_a')).rejects.toBeInstanceOf(ControlPlaneUnavailable);

    // The control plane back: the new answer replaces the stale one.
    cp.fail(undefined);
    cp.tenants.set('wk_a', { accountId: 'acc_1', writeKeyId: 'wk_a', version: 3 });
    expect((await cache.get('wk_a', 'wk_a'))?.version).toBe(3);
  });

  it('tells onResult how each get was answered: hit, miss (answered or failed) or stale', async () => {
    const results: string[] = [];
    const cache = cacheOf({ staleIfErrorMs: 15 * 60_000, onResult: (r) => results.push(r) });
    await cache.get('wk_a', 'wk_a'); // asked
    await cache.get('wk_a', 'wk_a'); // cached
    expect(await cache.get('wk_unknown', 'wk_unknown')).toBeNull(); // asked: unknown
    expect(await cache.get('wk_unknown', 'wk_unknown')).toBeNull(); // cached unknown
    cp.fail(503);
    now += HOUR + 1;
    await cache.get('wk_a', 'wk_a'); // the control plane fails: stale
    await expect(cache.get('wk_c', 'wk_c')).rejects.toBeInstanceOf(ControlPlaneUnavailable); // nothing to serve
    cache.peek('wk_a'); // not a get
    expect(results).toEqual(['miss', 'hit', 'miss', 'hit', 'stale', 'miss']);
  });

  it('never answers a stale "unknown" on errors: an unknown key is kept for unknownTtlMs, then asked', async () => {
    const cache = cacheOf({ unknownTtlMs: 30_000 });
    expect(await cache.get('wk_new', 'wk_new')).toBeNull();
    hears = false; // the 10 s rule is for tenants, which change messages name
    now += 29_999;
    expect(cache.peek('wk_new')).toBeNull();
    expect(await cache.get('wk_new', 'wk_new')).toBeNull();
    expect(cp.requests).toEqual(['wk_new']);
    now += 1;
    expect(cache.peek('wk_new')).toBeUndefined();
    cp.fail(503);
    hears = true;
    await expect(cache.get('wk_new', 'wk_new')).rejects.toBeInstanceOf(ControlPlaneUnavailable);
    cp.fail(undefined);
    cp.tenants.set('wk_new', { accountId: 'acc_3', writeKeyId: 'wk_new', version: 1 });
    expect((await cache.get('wk_new', 'wk_new'))?.accountId).toBe('acc_3');
  });

  it('keeps a tenant at most 10 s while changes are not heard, its TTL while they are', async () => {
    const cache = cacheOf();
    await cache.get('wk_a', 'wk_a');
    now += UNSUBSCRIBED_MAX_TTL_MS;
    expect(cache.peek('wk_a')?.writeKeyId).toBe('wk_a'); // heard: the hour's TTL holds
    hears = false;
    expect(cache.peek('wk_a')).toBeUndefined();
    await cache.get('wk_a', 'wk_a');
    expect(cp.requests).toEqual(['wk_a', 'wk_a']);
  });

  it('drops a revoked key, an account on a change, everything on a resync', async () => {
    const cache = cacheOf();
    for (const key of ['wk_a', 'wk_b', 'wk_c']) await cache.get(key, key);
    cache.invalidate({ kind: 'write_key_revoked', accountId: 'acc_1', writeKeyId: 'wk_a' });
    expect([cache.peek('wk_a'), cache.peek('wk_b')?.writeKeyId]).toEqual([undefined, 'wk_b']);
    cache.invalidate({ kind: 'tenant_changed', accountId: 'acc_1' });
    expect([cache.peek('wk_b'), cache.peek('wk_c')?.writeKeyId]).toEqual([undefined, 'wk_c']);
    cache.invalidate({ kind: 'resync' });
    expect(cache.peek('wk_c')).toBeUndefined();
  });

  it('does not keep an answer to a lookup under way when a change about it is heard, and survives a resync mid-lookup', async () => {
    const cache = cacheOf();
    cp.hold();
    const during = cache.get('wk_a', 'wk_a');
    await until(() => cp.requests.length === 1);
    cache.invalidate({ kind: 'tenant_changed', accountId: 'acc_1' });
    cp.release();
    expect((await during)?.version).toBe(1); // its caller gets it
    expect(cache.peek('wk_a')).toBeUndefined(); // the next one asks again
    cp.tenants.set('wk_a', { accountId: 'acc_1', writeKeyId: 'wk_a', version: 2 });
    expect((await cache.get('wk_a', 'wk_a'))?.version).toBe(2);

    // A resync aborts the lookup under way: its callers are answered by a new one.
    cp.hold();
    const cut = Promise.all([cache.get('wk_c', 'wk_c'), cache.get('wk_c', 'wk_c')]);
    await until(() => cp.requests.filter((r) => r === 'wk_c').length === 1);
    cache.invalidate({ kind: 'resync' });
    await until(() => cp.requests.filter((r) => r === 'wk_c').length >= 2);
    cp.release();
    expect((await cut).map((t) => t?.writeKeyId)).toEqual(['wk_c', 'wk_c']);
  });
});
