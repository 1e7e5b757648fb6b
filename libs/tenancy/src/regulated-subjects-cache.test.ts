import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes } from 'node:crypto';
import { createLogger } from '@pipeline/logger';
import { PassThrough } from 'node:stream';
import { ControlPlaneClient, ControlPlaneUnavailable } from './control-plane-client';
import { RegulatedSubjectsCache } from './regulated-subjects-cache';
import { subjectColumns, subjectHash, type RegulatedSubjectsRecord } from './regulated-subjects';

/**
 * A control plane look-alike on a real socket answering POST /internal/v1/regulated-subjects
 * from `records` (an account without one has no subjects), or `failWith` while set.
 */
async function startControlPlane() {
  const records = new Map<string, RegulatedSubjectsRecord>();
  const requests: string[] = [];
  let failWith: number | undefined;
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
    req.on('end', () => {
      const { accountId } = JSON.parse(body) as { accountId: string };
      requests.push(`${req.url} ${accountId} ${req.headers.authorization}`);
      const record = records.get(accountId) ?? {
        accountId,
        writeKeyId: '',
        hashKey: randomBytes(32).toString('base64'),
        ...subjectColumns([]),
      };
      res.writeHead(failWith ?? 200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(failWith ? { code: 'x' } : { data: record }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    records,
    requests,
    fail: (status: number | undefined) => (failWith = status),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const key = randomBytes(32);
const suppress = (accountId: string, userId: string): RegulatedSubjectsRecord => ({
  accountId,
  writeKeyId: '',
  hashKey: key.toString('base64'),
  ...subjectColumns([{ hash: subjectHash(key, 'USER_ID', userId), suppressed: true, deleteCutoff: null }]),
});

describe('RegulatedSubjectsCache against a control plane on a local socket', () => {
  let cp: Awaited<ReturnType<typeof startControlPlane>>;
  let now: number;
  let hears: boolean;
  const logger = createLogger({ service: 'regulated-subjects-cache-test', stream: new PassThrough() });
  const at = Date.parse('2026-11-29T12:00:00Z');

  beforeEach(async () => {
    cp = await startControlPlane();
    now = at;
    hears = true;
  });
  afterEach(() => cp.close());

  const cacheOf = (ttlMs = 60_000, staleIfErrorMs?: number) =>
    new RegulatedSubjectsCache(
      new ControlPlaneClient(cp.url, 'service-token', logger),
      { ttlMs, hearsChanges: () => hears, ...(staleIfErrorMs === undefined ? {} : { staleIfErrorMs }) },
      logger,
      () => now,
    );

  it("asks once per account with the service token, and decides with the answer's key", async () => {
    cp.records.set('acc-1', suppress('acc-1', 'user-x'));
    const cache = cacheOf();
    const [first, second] = await Promise.all([cache.forAccount('acc-1'), cache.forAccount('acc-1')]);
    expect(first).toBe(second);
    expect(first.size).toBe(1);
    expect(first.decide({ userId: 'user-x' }, at)).toBe('suppressed');
    expect(first.decide({ userId: 'user-y' }, at)).toBeNull();
    expect((await cache.forAccount('acc-2')).size).toBe(0);
    expect(cp.requests).toEqual([
      '/internal/v1/regulated-subjects acc-1 Bearer service-token',
      '/internal/v1/regulated-subjects acc-2 Bearer service-token',
    ]);
    expect(cache.peek('acc-1')).toBe(first);
    expect(cache.peek('acc-3')).toBeUndefined();
    expect(cache.lookups).toBe(2);
  });

  it("drops an account on its tenant_changed, not on another's nor on a key's revocation", async () => {
    const cache = cacheOf();
    expect((await cache.forAccount('acc-1')).size).toBe(0);
    await cache.forAccount('acc-2');
    cp.records.set('acc-1', suppress('acc-1', 'user-x'));
    cache.invalidate({ kind: 'write_key_revoked', accountId: 'acc-1', writeKeyId: 'wk-1' });
    cache.invalidate({ kind: 'tenant_changed', accountId: 'acc-2' });
    expect(cache.peek('acc-1')?.size).toBe(0);
    cache.invalidate({ kind: 'tenant_changed', accountId: 'acc-1' });
    expect(cache.peek('acc-1')).toBeUndefined();
    expect((await cache.forAccount('acc-1')).decide({ userId: 'user-x' }, at)).toBe('suppressed');
    cache.invalidate({ kind: 'resync' });
    expect(cache.peek('acc-1')).toBeUndefined();
    expect(cp.requests).toHaveLength(3);
  });

  it('asks again after 10 s while changes are not heard, after the TTL while they are', async () => {
    const cache = cacheOf(60_000);
    hears = false;
    await cache.forAccount('acc-1');
    cp.records.set('acc-1', suppress('acc-1', 'user-x'));
    now = at + 9_999;
    expect((await cache.forAccount('acc-1')).size).toBe(0);
    now = at + 10_000;
    expect((await cache.forAccount('acc-1')).size).toBe(1);
    hears = true;
    cp.records.delete('acc-1');
    now = at + 10_000 + 59_999;
    expect((await cache.forAccount('acc-1')).size).toBe(1);
    now = at + 10_000 + 60_000;
    expect((await cache.forAccount('acc-1')).size).toBe(0);
    expect(cp.requests).toHaveLength(3);
  });

  it('throws ControlPlaneUnavailable without a usable answer; past its TTL one is used only while changes are heard', async () => {
    const cache = cacheOf(1_000, 5_000);
    cp.fail(503);
    await expect(cache.forAccount('acc-1')).rejects.toBeInstanceOf(ControlPlaneUnavailable);
    cp.fail(undefined);
    cp.records.set('acc-1', suppress('acc-1', 'user-x'));
    await cache.forAccount('acc-1');
    cp.fail(500);
    now = at + 2_000;
    expect((await cache.forAccount('acc-1')).decide({ userId: 'user-x' }, at)).toBe('suppressed');
    hears = false;
    await expect(cache.forAccount('acc-1')).rejects.toBeInstanceOf(ControlPlaneUnavailable);
    hears = true;
    now = at + 6_001;
    await expect(cache.forAccount('acc-1')).rejects.toBeInstanceOf(ControlPlaneUnavailable);
    // A change drops the stale answer: a new regulation is never missed for an old one.
    now = at + 2_000;
    cache.invalidate({ kind: 'tenant_changed', accountId: 'acc-1' });
    await expect(cache.forAccount('acc-1')).rejects.toBeInstanceOf(ControlPlaneUnavailable);
  });

  it('tells how each lookup was answered, and says which cache served a stale answer', async () => {
    const results: string[] = [];
    const lines: string[] = [];
    const stream = new PassThrough();
    stream.on('data', (chunk: Buffer) => lines.push(chunk.toString('utf8')));
    const cache = new RegulatedSubjectsCache(
      new ControlPlaneClient(cp.url, 'service-token', logger),
      { ttlMs: 1_000, hearsChanges: () => true, onResult: (result) => results.push(result) },
      createLogger({ service: 'regulated-subjects-cache-test', stream }),
      () => now,
    );
    await cache.forAccount('acc-1');
    await cache.forAccount('acc-1');
    cp.fail(503);
    now = at + 2_000;
    await cache.forAccount('acc-1');
    expect(results).toEqual(['miss', 'hit', 'stale']);
    expect(lines.map((line) => (JSON.parse(line) as { cache?: string }).cache)).toEqual([
      'regulated subjects',
    ]);
  });

  it('treats an answer without subjects as the control plane unavailable', async () => {
    const cache = cacheOf();
    cp.records.set('acc-1', { accountId: 'acc-1', hashKey: 'k' } as unknown as RegulatedSubjectsRecord);
    await expect(cache.forAccount('acc-1')).rejects.toBeInstanceOf(ControlPlaneUnavailable);
  });
});
