import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import { createLogger } from '@pipeline/logger';
import type { TrackingPlan } from '@pipeline/tracking-plans';
import { ControlPlaneClient } from './control-plane-client';
import { TrackingPlanCache, type PlanLookup } from './tracking-plan-cache';

const planOf = (required: string, pad = 0): TrackingPlan => ({
  rules: [
    {
      type: 'track',
      name: 'Order Completed',
      schema: {
        ...(pad > 0 ? { description: 'x'.repeat(pad) } : {}),
        properties: { properties: { required: [required] } },
      },
    },
  ],
});

/**
 * A control plane look-alike on a real socket answering POST /internal/v1/tracking-plan-versions
 * from `versions` (`account plan version` -> plan; others 404), `failWith` while set, and holding
 * its answers while `hold` is set.
 */
async function startControlPlane() {
  const versions = new Map<string, TrackingPlan | 'garbage'>();
  const requests: string[] = [];
  let failWith: number | undefined;
  let held: (() => void)[] | undefined;
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
    req.on('end', () => {
      const { accountId, planId, version } = JSON.parse(body) as {
        accountId: string;
        planId: string;
        version: number;
      };
      requests.push(`${accountId} ${planId} ${version}`);
      const answer = () => {
        const plan = versions.get(`${accountId} ${planId} ${version}`);
        const status = failWith ?? (plan ? 200 : 404);
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify(
            status !== 200
              ? { code: status === 404 ? 'tracking_plan_version_not_found' : 'x' }
              : {
                  data: {
                    planId,
                    version,
                    hash: 'h',
                    plan: plan === 'garbage' ? { rules: [{ type: 'track', name: 'X', schema: 7 }] } : plan,
                  },
                },
          ),
        );
      };
      if (held) held.push(answer);
      else answer();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    versions,
    requests,
    fail: (status: number | undefined) => (failWith = status),
    hold: () => (held = []),
    release: () => {
      const answers = held ?? [];
      held = undefined;
      for (const answer of answers) answer();
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function until(condition: () => boolean, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

const required = (lookup: PlanLookup | undefined) =>
  lookup?.state === 'ready'
    ? lookup.plan.validate({ type: 'track', event: 'Order Completed', properties: {} }).map((v) => v.path)
    : lookup?.state;

describe('TrackingPlanCache', () => {
  let controlPlane: Awaited<ReturnType<typeof startControlPlane>>;
  const logs: string[] = [];
  const logger = (() => {
    const stream = new PassThrough();
    stream.on('data', (chunk: Buffer) => logs.push(chunk.toString('utf8')));
    return createLogger({ service: 'test', stream });
  })();
  const cacheWith = (options: ConstructorParameters<typeof TrackingPlanCache>[2] = {}) =>
    new TrackingPlanCache(new ControlPlaneClient(controlPlane.url, 't', logger, 500), logger, options);

  beforeEach(async () => {
    controlPlane = await startControlPlane();
    logs.length = 0;
  });
  afterEach(() => controlPlane.close());

  it('reads a version once for every caller waiting on it, and compiles it once', async () => {
    controlPlane.versions.set('acc plan 1', planOf('order_id'));
    const cache = cacheWith();
    expect(cache.peek('acc', 'plan', 1)).toBeUndefined();
    controlPlane.hold();
    const waiting = Array.from({ length: 10 }, () => cache.get('acc', 'plan', 1));
    await until(() => controlPlane.requests.length === 1);
    controlPlane.release();
    const found = await Promise.all(waiting);
    expect(controlPlane.requests).toEqual(['acc plan 1']);
    expect(cache.lookups).toBe(1);
    const plans = new Set(found.map((lookup) => (lookup.state === 'ready' ? lookup.plan : undefined)));
    expect(plans.size).toBe(1);
    expect(required(found[0])).toEqual(['/properties/order_id']);
    expect(found[0]).toMatchObject({ plan: { meta: { planId: 'plan', version: 1 } } });
    // Known now: answered without a promise, and never asked again.
    expect(required(cache.peek('acc', 'plan', 1))).toEqual(['/properties/order_id']);
    await cache.get('acc', 'plan', 1);
    expect(controlPlane.requests).toHaveLength(1);
  });

  it('keeps each account’s versions apart', async () => {
    controlPlane.versions.set('a1 plan 1', planOf('order_id'));
    controlPlane.versions.set('a2 plan 1', planOf('sku'));
    const cache = cacheWith();
    expect(required(await cache.get('a1', 'plan', 1))).toEqual(['/properties/order_id']);
    expect(required(await cache.get('a2', 'plan', 1))).toEqual(['/properties/sku']);
    expect(required(await cache.get('a1', 'plan', 1))).toEqual(['/properties/order_id']);
    expect(await cache.get('a3', 'plan', 1)).toEqual({ state: 'not_found' });
  });

  it('remembers a version that does not exist for its TTL, then asks again', async () => {
    const cache = cacheWith({ notFoundTtlMs: 100 });
    expect(await cache.get('acc', 'plan', 4)).toEqual({ state: 'not_found' });
    expect(cache.peek('acc', 'plan', 4)).toEqual({ state: 'not_found' });
    expect(await cache.get('acc', 'plan', 4)).toEqual({ state: 'not_found' });
    expect(controlPlane.requests).toHaveLength(1);
    controlPlane.versions.set('acc plan 4', planOf('order_id'));
    await until(() => cache.peek('acc', 'plan', 4) === undefined);
    expect(required(await cache.get('acc', 'plan', 4))).toEqual(['/properties/order_id']);
    expect(controlPlane.requests).toHaveLength(2);
  });

  it('answers unavailable for the back-off after a failure, then reads the version again', async () => {
    controlPlane.versions.set('acc plan 1', planOf('order_id'));
    controlPlane.fail(503);
    const cache = cacheWith({ retryAfterMs: 100 });
    expect(await cache.get('acc', 'plan', 1)).toEqual({ state: 'unavailable' });
    expect(await cache.get('acc', 'plan', 1)).toEqual({ state: 'unavailable' });
    expect(controlPlane.requests).toHaveLength(1);
    expect(logs.join('')).toContain('tracking plan version cannot be read');
    controlPlane.fail(undefined);
    await until(() => cache.peek('acc', 'plan', 1) === undefined);
    expect(required(await cache.get('acc', 'plan', 1))).toEqual(['/properties/order_id']);
  });

  it('answers unavailable, logged as an error, for a plan that will not compile', async () => {
    controlPlane.versions.set('acc plan 1', 'garbage');
    const cache = cacheWith();
    expect(await cache.get('acc', 'plan', 1)).toEqual({ state: 'unavailable' });
    expect(logs.join('')).toMatch(/"level":"error".*tracking plan version cannot be read/);
  });

  it('evicts the least recently used version beyond its count', async () => {
    for (const v of [1, 2, 3]) controlPlane.versions.set(`acc plan ${v}`, planOf(`p${v}`));
    const cache = cacheWith({ maxEntries: 2 });
    await cache.get('acc', 'plan', 1);
    await cache.get('acc', 'plan', 2);
    cache.peek('acc', 'plan', 1);
    await cache.get('acc', 'plan', 3);
    expect(cache.size).toBe(2);
    expect(cache.peek('acc', 'plan', 2)).toBeUndefined();
    expect(cache.peek('acc', 'plan', 1)?.state).toBe('ready');
    expect(cache.peek('acc', 'plan', 3)?.state).toBe('ready');
  });

  it('evicts by the plans’ size', async () => {
    for (const v of [1, 2, 3]) controlPlane.versions.set(`acc plan ${v}`, planOf(`p${v}`, 4_000));
    const cache = cacheWith({ maxBytes: 10_000 });
    for (const v of [1, 2, 3]) await cache.get('acc', 'plan', v);
    expect(cache.size).toBe(2);
    expect(cache.peek('acc', 'plan', 1)).toBeUndefined();
  });
});
