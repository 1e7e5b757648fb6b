import type { Logger } from '@pipeline/logger';
import { ControlPlaneUnavailable } from './control-plane-answer';
import { TenantCache, type TenantCacheOptions } from './tenant-cache';

interface Tenant {
  accountId: string;
  writeKeyId: string;
  version: number;
}

const HOUR = 3_600_000;
const MINUTE = 60_000;

/**
 * The lookup the cache is given, in memory: answers the tenant of a known key, null for others,
 * or throws `failWith` while set. While `holding`, answers wait for `release`, so lookups can be
 * held in flight while changes are heard.
 */
function controlPlane() {
  const state = {
    tenants: new Map<string, Tenant>(),
    /** `key:context` of every lookup, in order. */
    asked: [] as string[],
    failWith: undefined as Error | undefined,
    holding: false,
    waiting: [] as (() => void)[],
    lookup: async (key: string, context: string): Promise<Tenant | null> => {
      state.asked.push(`${key}:${context}`);
      if (state.holding) await new Promise<void>((resolve) => state.waiting.push(resolve));
      if (state.failWith) throw state.failWith;
      const tenant = state.tenants.get(key);
      return tenant ? { ...tenant } : null;
    },
    /** Answers the oldest held lookup. */
    releaseOne: () => state.waiting.shift()?.(),
  };
  state.tenants.set('wk_a', { accountId: 'acc_1', writeKeyId: 'wk_a', version: 1 });
  state.tenants.set('wk_b', { accountId: 'acc_1', writeKeyId: 'wk_b', version: 1 });
  state.tenants.set('wk_c', { accountId: 'acc_2', writeKeyId: 'wk_c', version: 1 });
  return state;
}

/** Lets pending promise callbacks and I/O callbacks run until `check` holds, a bounded number of turns. */
async function waitFor(check: () => boolean): Promise<void> {
  for (let turn = 0; turn < 200 && !check(); turn += 1) await new Promise((resolve) => setImmediate(resolve));
  expect(check()).toBe(true);
}

// Every lookup here answers within a few turns of the event loop: a test that waits longer is
// one whose cache never answers.
jest.setTimeout(2_000);

describe('TenantCache, over an in-memory lookup', () => {
  let cp: ReturnType<typeof controlPlane>;
  let now: number;
  let hears: boolean;
  let warnings: [string, Record<string, unknown>][];
  let results: string[];
  const logger = {
    warn: (message: string, meta: Record<string, unknown>) => warnings.push([message, meta]),
  } as unknown as Logger;

  beforeEach(() => {
    cp = controlPlane();
    now = 1_000_000;
    hears = true;
    warnings = [];
    results = [];
  });

  const cacheOf = (over: Partial<TenantCacheOptions> = {}) =>
    new TenantCache<Tenant>(
      cp.lookup,
      {
        ttlMs: HOUR,
        unknownTtlMs: MINUTE,
        hearsChanges: () => hears,
        onResult: (result) => results.push(result),
        ...over,
      },
      logger,
      () => now,
    );
  const versionOf = async (cache: TenantCache<Tenant>, key: string) =>
    (await cache.get(key, `ctx_${key}`))?.version;

  it('asks once with the context given, then serves the tenant until its TTL ends', async () => {
    const cache = cacheOf();
    expect(cache.lookups).toBe(0);
    expect(await cache.get('wk_a', 'the key')).toEqual({
      accountId: 'acc_1',
      writeKeyId: 'wk_a',
      version: 1,
    });
    now += HOUR - 1;
    expect(cache.peek('wk_a')?.version).toBe(1);
    expect(await versionOf(cache, 'wk_a')).toBe(1);
    expect(cp.asked).toEqual(['wk_a:the key']);
    expect(cache.lookups).toBe(1);
    now += 1;
    cp.tenants.set('wk_a', { accountId: 'acc_1', writeKeyId: 'wk_a', version: 2 });
    expect(cache.peek('wk_a')).toBeUndefined();
    expect(await versionOf(cache, 'wk_a')).toBe(2);
    expect(cp.asked).toEqual(['wk_a:the key', 'wk_a:ctx_wk_a']);
    expect(cache.lookups).toBe(2);
    expect(results).toEqual(['miss', 'hit', 'miss']);
  });

  it('shares one lookup among concurrent gets of a key', async () => {
    const cache = cacheOf();
    cp.holding = true;
    const pending = [cache.get('wk_a', 'k'), cache.get('wk_a', 'k'), cache.get('wk_c', 'k')];
    await waitFor(() => cp.waiting.length === 2);
    expect(cache.lookupsUnderWay).toBe(2);
    cp.releaseOne();
    cp.releaseOne();
    expect((await Promise.all(pending)).map((t) => t?.writeKeyId)).toEqual(['wk_a', 'wk_a', 'wk_c']);
    expect(cache.lookupsUnderWay).toBe(0);
    expect(cp.asked).toEqual(['wk_a:k', 'wk_c:k']);
    expect(cache.lookups).toBe(2);
  });

  it('keeps an unknown key for unknownTtlMs alone, whether or not changes are heard', async () => {
    const cache = cacheOf();
    hears = false;
    expect(await cache.get('wk_new', 'k')).toBeNull();
    now += MINUTE - 1;
    expect(cache.peek('wk_new')).toBeNull();
    expect(await cache.get('wk_new', 'k')).toBeNull();
    expect(cp.asked).toEqual(['wk_new:k']);
    now += 1;
    expect(cache.peek('wk_new')).toBeUndefined();
    expect(cache.peek('wk_never')).toBeUndefined();
    cp.tenants.set('wk_new', { accountId: 'acc_3', writeKeyId: 'wk_new', version: 1 });
    expect(await versionOf(cache, 'wk_new')).toBe(1);
    expect(results).toEqual(['miss', 'hit', 'miss']);
  });

  it('keeps a tenant at most 10 s while changes are not heard, and takes that as the default', async () => {
    for (const cache of [cacheOf({ hearsChanges: () => false }), cacheOf({ hearsChanges: undefined })]) {
      cp.asked = [];
      const start = now;
      await cache.get('wk_a', 'k');
      now = start + 9_999;
      expect(cache.peek('wk_a')?.writeKeyId).toBe('wk_a');
      now = start + 10_000;
      expect(cache.peek('wk_a')).toBeUndefined();
      await cache.get('wk_a', 'k');
      expect(cp.asked).toEqual(['wk_a:k', 'wk_a:k']);
    }
  });

  it('holds at most maxEntries, dropping the one looked up longest ago (a hit does not count)', async () => {
    const cache = cacheOf({ maxEntries: 2 });
    await cache.get('wk_a', 'k');
    await cache.get('wk_b', 'k');
    await cache.get('wk_a', 'k');
    await cache.get('wk_c', 'k');
    const cached = ['wk_a', 'wk_b', 'wk_c'].map((key) => cache.peek(key)?.writeKeyId);
    expect(cached).toEqual([undefined, 'wk_b', 'wk_c']);
  });

  it('drops a revoked key of its account only, every key of a changed account, everything on a resync', async () => {
    const cache = cacheOf();
    for (const key of ['wk_a', 'wk_b', 'wk_c', 'wk_unknown']) await cache.get(key, 'k');
    const cached = () =>
      ['wk_a', 'wk_b', 'wk_c', 'wk_unknown'].map((key) => cache.peek(key)?.writeKeyId ?? cache.peek(key));

    // The same key id in another account names another key.
    cache.invalidate({ kind: 'write_key_revoked', accountId: 'acc_2', writeKeyId: 'wk_a' });
    expect(cached()).toEqual(['wk_a', 'wk_b', 'wk_c', null]);
    cache.invalidate({ kind: 'write_key_revoked', accountId: 'acc_1', writeKeyId: 'wk_a' });
    expect(cached()).toEqual([undefined, 'wk_b', 'wk_c', null]);
    cache.invalidate({ kind: 'tenant_changed', accountId: 'acc_3' });
    expect(cached()).toEqual([undefined, 'wk_b', 'wk_c', null]);
    cache.invalidate({ kind: 'tenant_changed', accountId: 'acc_1' });
    expect(cached()).toEqual([undefined, undefined, 'wk_c', null]);
    cache.invalidate({ kind: 'resync' });
    expect(cached()).toEqual([undefined, undefined, undefined, undefined]);
  });

  it('gives a lookup’s answer to its callers but does not keep it when a change about it was heard meanwhile', async () => {
    const cache = cacheOf();
    cp.holding = true;
    const during = cache.get('wk_a', 'k');
    await waitFor(() => cp.waiting.length === 1);
    cache.invalidate({ kind: 'tenant_changed', accountId: 'acc_2' });
    cache.invalidate({ kind: 'write_key_revoked', accountId: 'acc_1', writeKeyId: 'wk_a' });
    cp.releaseOne();
    expect((await during)?.version).toBe(1);
    expect(cache.peek('wk_a')).toBeUndefined();
  });

  it('keeps an answer when the changes heard meanwhile are about other keys or accounts', async () => {
    const cache = cacheOf();
    cp.holding = true;
    const during = cache.get('wk_a', 'k');
    await waitFor(() => cp.waiting.length === 1);
    cache.invalidate({ kind: 'tenant_changed', accountId: 'acc_2' });
    cache.invalidate({ kind: 'write_key_revoked', accountId: 'acc_1', writeKeyId: 'wk_b' });
    cp.releaseOne();
    expect((await during)?.version).toBe(1);
    expect(cache.peek('wk_a')?.version).toBe(1);
    now += HOUR - 1;
    expect(cache.peek('wk_a')?.version).toBe(1);
  });

  it('judges each lookup by the changes heard since it started, while others are under way', async () => {
    const cache = cacheOf();
    cp.holding = true;
    const first = cache.get('wk_a', 'k');
    await waitFor(() => cp.waiting.length === 1);
    cache.invalidate({ kind: 'tenant_changed', accountId: 'acc_1' });
    const second = cache.get('wk_b', 'k');
    await waitFor(() => cp.waiting.length === 2);
    const third = cache.get('wk_c', 'k');
    await waitFor(() => cp.waiting.length === 3);
    cp.waiting[1]!();
    expect((await second)?.writeKeyId).toBe('wk_b');
    // Started after the change: kept.
    expect(cache.peek('wk_b')?.writeKeyId).toBe('wk_b');
    cp.waiting[0]!();
    expect((await first)?.writeKeyId).toBe('wk_a');
    // Started before it, answered after another lookup ended: still not kept.
    expect(cache.peek('wk_a')).toBeUndefined();
    cp.waiting[2]!();
    expect((await third)?.writeKeyId).toBe('wk_c');
    expect(cache.lookupsUnderWay).toBe(0);
    expect(cache.peek('wk_c')?.writeKeyId).toBe('wk_c');
  });

  it('forgets the changes heard once no lookup is under way', async () => {
    const cache = cacheOf();
    cp.holding = true;
    const first = cache.get('wk_a', 'k');
    await waitFor(() => cp.waiting.length === 1);
    cache.invalidate({ kind: 'tenant_changed', accountId: 'acc_1' });
    cp.releaseOne();
    await first;
    // No lookup under way when this one is heard; the next lookup starts after it.
    cache.invalidate({ kind: 'tenant_changed', accountId: 'acc_1' });
    const second = cache.get('wk_a', 'k');
    await waitFor(() => cp.waiting.length === 1);
    cp.releaseOne();
    await second;
    expect(cache.peek('wk_a')?.writeKeyId).toBe('wk_a');
  });

  it('asks again when a resync drops the lookup under way, and its callers get the new answer', async () => {
    const cache = cacheOf();
    cp.holding = true;
    const cut = Promise.all([cache.get('wk_c', 'k'), cache.get('wk_c', 'k')]);
    await waitFor(() => cp.waiting.length === 1);
    cache.invalidate({ kind: 'resync' });
    cp.tenants.set('wk_c', { accountId: 'acc_2', writeKeyId: 'wk_c', version: 2 });
    await waitFor(() => cp.waiting.length === 2);
    cp.releaseOne();
    cp.releaseOne();
    expect((await cut).map((t) => t?.version)).toEqual([2, 2]);
    expect(cp.asked).toEqual(['wk_c:k', 'wk_c:k']);
    expect(cache.peek('wk_c')?.version).toBe(2);
  });

  it('gives up after three lookups that resyncs dropped, passing the last abort on', async () => {
    const cache = cacheOf();
    cp.holding = true;
    const cut = cache.get('wk_c', 'k').then(
      (tenant) => ({ tenant }),
      (error: unknown) => ({ error }),
    );
    for (let asked = 1; asked <= 3; asked += 1) {
      await waitFor(() => cp.asked.length === asked);
      cache.invalidate({ kind: 'resync' });
    }
    const outcome = await cut;
    expect(cp.asked).toEqual(['wk_c:k', 'wk_c:k', 'wk_c:k']);
    expect(outcome).toEqual({ error: expect.any(Error) });
    expect(results).toEqual(['miss']);
    cp.waiting.splice(0).forEach((release) => release());
  });

  it('serves a tenant past its TTL while the control plane is unavailable, for staleIfErrorMs, only while changes are heard', async () => {
    const cache = cacheOf({ staleIfErrorMs: 5 * MINUTE, name: 'delivery' });
    await cache.get('wk_a', 'k');
    cp.failWith = new ControlPlaneUnavailable('control plane answered 503');
    now += HOUR + 5 * MINUTE - 1;
    expect(await versionOf(cache, 'wk_a')).toBe(1);
    expect(warnings).toEqual([
      [
        'control plane unavailable; using a cached tenant past its TTL',
        { cache: 'delivery', error: 'control plane answered 503' },
      ],
    ]);
    // Kept after the failure: served again on the next one.
    expect(await versionOf(cache, 'wk_a')).toBe(1);
    expect(cp.asked).toHaveLength(3);

    hears = false;
    await expect(cache.get('wk_a', 'k')).rejects.toBe(cp.failWith);
    hears = true;
    // Still kept after a failure it could not be served for.
    expect(await versionOf(cache, 'wk_a')).toBe(1);
    now += 1;
    await expect(cache.get('wk_a', 'k')).rejects.toBe(cp.failWith);
    expect(results).toEqual(['miss', 'stale', 'stale', 'miss', 'stale', 'miss']);
    expect(cp.asked).toHaveLength(6);

    cp.failWith = undefined;
    cp.tenants.set('wk_a', { accountId: 'acc_1', writeKeyId: 'wk_a', version: 3 });
    expect(await versionOf(cache, 'wk_a')).toBe(3);
  });

  // Security review 2026-11-29, finding 8: lru-cache's entries() skipped a key whose refresh was
  // under way, and put the revoked entry back when that refresh failed.
  it('serves no tenant revoked while its refresh was under way, when that refresh then fails', async () => {
    const cache = cacheOf();
    await cache.get('wk_a', 'k');
    await cache.get('wk_b', 'k');
    now += HOUR;
    cp.failWith = new ControlPlaneUnavailable('down');
    cp.holding = true;
    const refresh = cache.get('wk_a', 'k').then(
      (tenant) => ({ tenant }),
      (error: unknown) => ({ error }),
    );
    await waitFor(() => cp.waiting.length === 1);
    cache.invalidate({ kind: 'write_key_revoked', accountId: 'acc_1', writeKeyId: 'wk_a' });
    // The refresh was cut short and asked again, without the revoked entry to fall back on.
    await waitFor(() => cp.waiting.length === 2);
    cp.waiting.splice(0).forEach((release) => release());
    expect(await refresh).toEqual({ error: cp.failWith });
    cp.holding = false;
    await expect(cache.get('wk_a', 'k')).rejects.toBe(cp.failWith);
    expect(cache.peek('wk_a')).toBeUndefined();
    // The account's other key was not revoked: still served stale while the control plane is down.
    expect((await cache.get('wk_b', 'k'))?.version).toBe(1);
    expect(cp.asked).toEqual(['wk_a:k', 'wk_b:k', 'wk_a:k', 'wk_a:k', 'wk_a:k', 'wk_b:k']);
    expect(results).toEqual(['miss', 'miss', 'miss', 'miss', 'stale']);
  });

  it('serves a stale tenant for 15 minutes unless told, naming the cache "tenants"', async () => {
    const cache = cacheOf();
    await cache.get('wk_a', 'k');
    cp.failWith = new ControlPlaneUnavailable('down');
    now += HOUR + 15 * MINUTE - 1;
    expect(await versionOf(cache, 'wk_a')).toBe(1);
    expect(warnings).toEqual([
      ['control plane unavailable; using a cached tenant past its TTL', { cache: 'tenants', error: 'down' }],
    ]);
    now += 1;
    await expect(cache.get('wk_a', 'k')).rejects.toBe(cp.failWith);
  });

  it('serves no stale tenant for an error other than the control plane being unavailable', async () => {
    const cache = cacheOf();
    await cache.get('wk_a', 'k');
    cp.failWith = new TypeError('a bug');
    now += HOUR;
    await expect(cache.get('wk_a', 'k')).rejects.toBe(cp.failWith);
    expect(warnings).toEqual([]);
    expect(results).toEqual(['miss', 'stale']);
  });

  it('never serves a stale "unknown", and throws when nothing was cached', async () => {
    const cache = cacheOf();
    expect(await cache.get('wk_new', 'k')).toBeNull();
    cp.failWith = new ControlPlaneUnavailable('down');
    now += MINUTE;
    await expect(cache.get('wk_new', 'k')).rejects.toBe(cp.failWith);
    await expect(cache.get('wk_c', 'k')).rejects.toBe(cp.failWith);
    expect(cp.asked).toEqual(['wk_new:k', 'wk_new:k', 'wk_c:k']);
    expect(cache.lookupsUnderWay).toBe(0);
    expect(results).toEqual(['miss', 'miss', 'miss']);
    expect(warnings).toEqual([]);
  });

  it('asks again when a resync cuts the refresh of a tenant past its TTL', async () => {
    const cache = cacheOf();
    await cache.get('wk_c', 'k');
    now += HOUR;
    cp.holding = true;
    const refresh = cache.get('wk_c', 'k');
    await waitFor(() => cp.waiting.length === 1);
    cache.invalidate({ kind: 'resync' });
    cp.tenants.set('wk_c', { accountId: 'acc_2', writeKeyId: 'wk_c', version: 2 });
    await waitFor(() => cp.waiting.length === 2);
    cp.waiting.splice(0).forEach((release) => release());
    expect((await refresh)?.version).toBe(2);
    expect(cp.asked).toEqual(['wk_c:k', 'wk_c:k', 'wk_c:k']);
    expect(results).toEqual(['miss', 'miss']);
  });

  it('needs no onResult, no name and no hearsChanges', async () => {
    const cache = new TenantCache<Tenant>(
      cp.lookup,
      { ttlMs: HOUR, unknownTtlMs: MINUTE },
      logger,
      () => now,
    );
    expect((await cache.get('wk_a', 'k'))?.version).toBe(1);
    expect((await cache.get('wk_a', 'k'))?.version).toBe(1);
    cp.failWith = new ControlPlaneUnavailable('down');
    await expect(cache.get('wk_c', 'k')).rejects.toBe(cp.failWith);
    cp.failWith = undefined;
    cp.holding = true;
    const cut = cache.get('wk_b', 'k');
    await waitFor(() => cp.waiting.length === 1);
    cache.invalidate({ kind: 'resync' });
    await waitFor(() => cp.waiting.length === 2);
    cp.waiting.splice(0).forEach((release) => release());
    expect((await cut)?.writeKeyId).toBe('wk_b');
    expect(cp.asked).toEqual(['wk_a:k', 'wk_c:k', 'wk_b:k', 'wk_b:k']);
  });

  it('gives up on a refresh after three lookups that resyncs dropped', async () => {
    const cache = cacheOf();
    await cache.get('wk_c', 'k');
    now += HOUR;
    cp.holding = true;
    const refresh = cache.get('wk_c', 'k').then(
      (tenant) => ({ tenant }),
      (error: unknown) => ({ error }),
    );
    for (let asked = 2; asked <= 4; asked += 1) {
      await waitFor(() => cp.asked.length === asked);
      cache.invalidate({ kind: 'resync' });
    }
    expect(await refresh).toEqual({ error: expect.any(Error) });
    expect(cp.asked).toHaveLength(4);
    expect(results).toEqual(['miss', 'miss']);
    cp.waiting.splice(0).forEach((release) => release());
  });
});
