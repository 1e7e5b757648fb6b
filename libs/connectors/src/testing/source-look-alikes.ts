import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A local server that answers like a vendor's API (tests and benchmarks). */
export interface SourceLookAlike {
  readonly url: string;
  /** The credential it accepts. */
  readonly secret: string;
  /** Every request: path with query, and the status answered. */
  readonly requests: { path: string; status: number }[];
  /** Records by stream, as the vendor stores them. */
  readonly data: Map<string, Record<string, unknown>[]>;
  /** The next `times` requests get this status (with Retry-After when given). */
  failNext(status: number, times?: number, retryAfter?: string): void;
  /** After `requests` more successful requests, the next `times` get `status` (a failure mid-stream). */
  failAfter(requests: number, status: number, times?: number): void;
  /** Forgets every scripted failure not answered yet. */
  clearFailures(): void;
  close(): Promise<void>;
}

interface Script {
  failures: { status: number; retryAfter?: string }[];
  failAfter?: { remaining: number; status: number; times: number };
}

async function listen(
  secret: string,
  handle: (req: IncomingMessage, url: URL, res: ServerResponse) => void,
  data: Map<string, Record<string, unknown>[]>,
): Promise<SourceLookAlike> {
  const requests: { path: string; status: number }[] = [];
  const script: Script = { failures: [] };
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    res.on('finish', () => requests.push({ path: `${url.pathname}${url.search}`, status: res.statusCode }));
    const failure = script.failures.shift();
    if (failure) {
      res.writeHead(failure.status, {
        'content-type': 'application/json',
        ...(failure.retryAfter ? { 'retry-after': failure.retryAfter } : {}),
      });
      res.end(JSON.stringify({ error: { type: 'api_error', message: 'scripted failure' } }));
      return;
    }
    if (script.failAfter) {
      if (script.failAfter.remaining === 0) {
        const { status } = script.failAfter;
        script.failAfter.times -= 1;
        if (script.failAfter.times <= 0) script.failAfter = undefined;
        res.writeHead(status, { 'content-type': 'application/json' }).end('{"error":{"type":"api_error"}}');
        return;
      }
      script.failAfter.remaining -= 1;
    }
    handle(req, url, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    secret,
    requests,
    data,
    failNext: (status, times = 1, retryAfter) => {
      for (let i = 0; i < times; i += 1)
        script.failures.push({ status, ...(retryAfter ? { retryAfter } : {}) });
    },
    failAfter: (count, status, times = 1) => {
      script.failAfter = { remaining: count, status, times };
    },
    clearFailures: () => {
      script.failures.length = 0;
      script.failAfter = undefined;
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) =>
  res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));

const stripePrefixes: Record<string, string> = {
  customers: 'cus',
  charges: 'ch',
  invoices: 'in',
  subscriptions: 'sub',
};

/**
 * Stripe's list APIs: Bearer or Basic secret key, `limit` 1-100, `starting_after`/`ending_before`
 * (not both), `created[gte|gt|lte|lt]`, newest first, `has_more`; subscriptions without
 * `status=all` leave out canceled ones. Error bodies as Stripe's.
 *
 * `/v1/events` lists the events in `data.get('events')` (see {@link recordStripeEvent}) the same
 * way, filtered by `types[]` (exact names, at most 20) or `type` (with `*` wildcards), not both.
 * `ending_before=<id>` answers the `limit` items just newer than that one, still newest first,
 * `has_more` telling whether newer ones remain (as Stripe, and stripe-node's backwards paging).
 */
export async function startStripeLookAlike(options: { secret?: string } = {}): Promise<SourceLookAlike> {
  const secret = options.secret ?? 'sk_test_lookalike';
  const data = new Map<string, Record<string, unknown>[]>(
    [...Object.keys(stripePrefixes), 'events'].map((s) => [s, []]),
  );
  const error = (res: ServerResponse, status: number, type: string, message: string) =>
    json(res, status, { error: { type, message } });
  return listen(
    secret,
    (req, url, res) => {
      const auth = req.headers.authorization ?? '';
      const basic = auth.startsWith('Basic ')
        ? Buffer.from(auth.slice(6), 'base64').toString().split(':')[0]
        : undefined;
      if (auth !== `Bearer ${secret}` && basic !== secret)
        return error(res, 401, 'invalid_request_error', 'Invalid API Key provided');
      const stream = /^\/v1\/(\w+)$/.exec(url.pathname)?.[1];
      const records = stream ? data.get(stream) : undefined;
      if (!records)
        return error(res, 404, 'invalid_request_error', `Unrecognized request URL (GET: ${url.pathname})`);
      const q = url.searchParams;
      const limit = Number(q.get('limit') ?? '10');
      if (!Number.isInteger(limit) || limit < 1 || limit > 100)
        return error(res, 400, 'invalid_request_error', 'Invalid integer: limit must be between 1 and 100');
      if (q.has('starting_after') && q.has('ending_before'))
        return error(
          res,
          400,
          'invalid_request_error',
          'You may only specify one of these parameters: starting_after, ending_before.',
        );
      let list = [...records].sort(
        (a, b) => Number(b.created) - Number(a.created) || String(b.id).localeCompare(String(a.id)),
      );
      const bound = (op: string, test: (created: number, value: number) => boolean) => {
        const value = q.get(`created[${op}]`);
        if (value !== null) list = list.filter((r) => test(Number(r.created), Number(value)));
      };
      bound('gte', (c, v) => c >= v);
      bound('gt', (c, v) => c > v);
      bound('lte', (c, v) => c <= v);
      bound('lt', (c, v) => c < v);
      if (stream === 'subscriptions' && q.get('status') !== 'all')
        list = list.filter((r) => r.status !== 'canceled');
      if (stream === 'events') {
        const types = q.getAll('types[]');
        const type = q.get('type');
        if (types.length > 0 && type !== null)
          return error(
            res,
            400,
            'invalid_request_error',
            'You may only specify one of these parameters: type, types.',
          );
        if (types.length > 20)
          return error(res, 400, 'invalid_request_error', 'types: you may pass at most 20 event types.');
        if (types.length > 0) list = list.filter((r) => types.includes(String(r.type)));
        if (type !== null) {
          const pattern = new RegExp(
            `^${type
              .split('*')
              .map((p) => p.replace(/[.]/g, '\\.'))
              .join('[^]*')}$`,
          );
          list = list.filter((r) => pattern.test(String(r.type)));
        }
      }
      const after = q.get('starting_after');
      const before = q.get('ending_before');
      let hasMore: boolean;
      if (before) {
        const index = list.findIndex((r) => r.id === before);
        if (index < 0) return error(res, 400, 'invalid_request_error', `No such object: '${before}'`);
        list = list.slice(Math.max(0, index - limit), index);
        hasMore = index - limit > 0;
      } else {
        if (after) {
          const index = list.findIndex((r) => r.id === after);
          if (index < 0) return error(res, 400, 'invalid_request_error', `No such object: '${after}'`);
          list = list.slice(index + 1);
        }
        hasMore = list.length > limit;
        list = list.slice(0, limit);
      }
      json(res, 200, { object: 'list', url: url.pathname, has_more: hasMore, data: list });
    },
    data,
  );
}

let stripeEventCount = 0;

/**
 * A change to an object of a Stripe look-alike: the object is stored as given (or removed, for
 * a `*.deleted` event of a customer or invoice) and an event of `type` with a copy of it in
 * `data.object` is added, created at `created` (unix seconds). Returns the event.
 */
export function recordStripeEvent(
  stripe: SourceLookAlike,
  stream: string,
  type: string,
  object: Record<string, unknown>,
  created: number,
): Record<string, unknown> {
  const records = stripe.data.get(stream);
  if (!records) throw new Error(`no stream ${stream}`);
  const index = records.findIndex((r) => r.id === object.id);
  const removed = type === 'customer.deleted' || type === 'invoice.deleted';
  if (index >= 0) records.splice(index, 1, ...(removed ? [] : [object]));
  else if (!removed) records.push(object);
  stripeEventCount += 1;
  const event = {
    id: `evt_${String(stripeEventCount).padStart(10, '0')}`,
    object: 'event',
    type,
    created,
    livemode: false,
    data: { object: structuredClone(object) },
  };
  stripe.data.get('events')?.push(event);
  return event;
}

/** Stripe-shaped objects of a stream, created one second apart ending at `newestCreated`. */
export function stripeRecords(
  stream: string,
  count: number,
  newestCreated: number,
  from = 0,
): Record<string, unknown>[] {
  const prefix = stripePrefixes[stream] ?? stream;
  return Array.from({ length: count }, (_, i) => ({
    id: `${prefix}_${String(from + i).padStart(8, '0')}`,
    object: stream.replace(/s$/, ''),
    created: newestCreated - (count - 1 - i),
    livemode: false,
    metadata: {},
    ...(stream === 'customers'
      ? { email: `customer${from + i}@example.com`, name: `Customer ${from + i}` }
      : {}),
    ...(stream === 'charges'
      ? { amount: 1000 + i, currency: 'usd', status: 'succeeded', customer: `cus_${i}` }
      : {}),
    ...(stream === 'subscriptions'
      ? { status: i % 5 === 0 ? 'canceled' : 'active', customer: `cus_${i}` }
      : {}),
    ...(stream === 'invoices' ? { amount_due: 500, amount_paid: 500, currency: 'usd', status: 'paid' } : {}),
  }));
}

/**
 * Shopify Admin REST: X-Shopify-Access-Token, `limit` up to 250, `updated_at_min`, orders open
 * only unless `status=any`, Link-header cursors whose requests may add only `limit` and
 * `fields`, and a leaky bucket (X-Shopify-Shop-Api-Call-Limit; full: 429 with Retry-After 2.0).
 */
export async function startShopifyLookAlike(
  options: {
    token?: string;
    bucketSize?: number;
    leakPerSecond?: number;
    /** The origin its next-page links name in place of its own (a shop that points elsewhere). */
    linkOrigin?: string;
  } = {},
): Promise<SourceLookAlike & { bucketUsed(): number }> {
  const token = options.token ?? 'shpat_lookalike';
  const size = options.bucketSize ?? 40;
  const leak = options.leakPerSecond ?? 2;
  let used = 0;
  let leakedAt = Date.now();
  const fill = () => {
    const now = Date.now();
    used = Math.max(0, used - ((now - leakedAt) / 1000) * leak);
    leakedAt = now;
  };
  const data = new Map<string, Record<string, unknown>[]>(
    ['orders', 'customers', 'products'].map((s) => [s, []]),
  );
  const server = await listen(
    token,
    (req, url, res) => {
      if (req.headers['x-shopify-access-token'] !== token)
        return json(res, 401, {
          errors: '[API] Invalid API key or access token (unrecognized login or wrong password)',
        });
      fill();
      if (used + 1 > size)
        return json(
          res,
          429,
          {
            errors:
              'Exceeded 2 calls per second for api client. Reduce request rates to resume uninterrupted service.',
          },
          { 'retry-after': '2.0' },
        );
      used += 1;
      const limitHeader = { 'x-shopify-shop-api-call-limit': `${Math.ceil(used)}/${size}` };
      const match = /^\/admin\/api\/\d{4}-\d{2}\/(\w+)\.json$/.exec(url.pathname);
      if (match?.[1] === 'shop')
        return json(res, 200, { shop: { id: 1, name: 'Look-alike shop' } }, limitHeader);
      const stream = match?.[1];
      const records = stream ? data.get(stream) : undefined;
      if (!stream || !records) return json(res, 404, { errors: 'Not Found' }, limitHeader);
      const q = url.searchParams;
      const limit = Number(q.get('limit') ?? '50');
      if (!Number.isInteger(limit) || limit < 1 || limit > 250)
        return json(res, 400, { errors: { limit: ['must be between 1 and 250'] } }, limitHeader);
      let filters: Record<string, string>;
      let offset = 0;
      const pageInfo = q.get('page_info');
      if (pageInfo) {
        const extra = [...q.keys()].filter((k) => k !== 'page_info' && k !== 'limit' && k !== 'fields');
        if (extra.length > 0)
          return json(
            res,
            400,
            { errors: { [extra[0] as string]: [`${extra[0]} cannot be passed when page_info is present`] } },
            limitHeader,
          );
        try {
          ({ filters, offset } = JSON.parse(Buffer.from(pageInfo, 'base64url').toString()) as {
            filters: Record<string, string>;
            offset: number;
          });
        } catch {
          return json(res, 400, { errors: { page_info: ['Invalid value.'] } }, limitHeader);
        }
      } else {
        filters = Object.fromEntries([...q.entries()].filter(([k]) => k !== 'limit' && k !== 'fields'));
      }
      let list = [...records].sort((a, b) => Number(a.id) - Number(b.id));
      if (filters.updated_at_min) {
        const min = Date.parse(filters.updated_at_min);
        list = list.filter((r) => Date.parse(String(r.updated_at)) >= min);
      }
      if (stream === 'orders' && filters.status !== 'any') list = list.filter((r) => r.status === 'open');
      const page = list.slice(offset, offset + limit);
      const links: string[] = [];
      const cursor = (o: number) => Buffer.from(JSON.stringify({ filters, offset: o })).toString('base64url');
      const base = `${options.linkOrigin ?? server.url}${url.pathname}?limit=${limit}&page_info=`;
      if (offset + limit < list.length) links.push(`<${base}${cursor(offset + limit)}>; rel="next"`);
      if (offset > 0) links.push(`<${base}${cursor(Math.max(0, offset - limit))}>; rel="previous"`);
      json(
        res,
        200,
        { [stream]: page },
        { ...limitHeader, ...(links.length ? { link: links.join(', ') } : {}) },
      );
    },
    data,
  );
  return { ...server, requests: server.requests, data: server.data, bucketUsed: () => (fill(), used) };
}

/** Shopify-shaped records of a stream, ids from `from`, updated at `updatedAt`. */
export function shopifyRecords(
  stream: string,
  count: number,
  updatedAt: Date,
  from = 1,
): Record<string, unknown>[] {
  return Array.from({ length: count }, (_, i) => ({
    id: from + i,
    updated_at: updatedAt.toISOString(),
    created_at: updatedAt.toISOString(),
    ...(stream === 'orders'
      ? { status: i % 4 === 0 ? 'closed' : 'open', total_price: '19.90', currency: 'EUR' }
      : {}),
    ...(stream === 'customers' ? { email: `shopper${from + i}@example.com` } : {}),
    ...(stream === 'products' ? { title: `Product ${from + i}`, variants: [] } : {}),
  }));
}
