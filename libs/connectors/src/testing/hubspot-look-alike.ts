import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { HubSpotObject } from '../hubspot/hubspot-connector';

/** A local server that answers like HubSpot's CRM v3 objects, properties and search APIs. */
export interface HubSpotLookAlike {
  readonly url: string;
  /** The private app token it accepts. */
  readonly secret: string;
  /** Every request: method, path with query, JSON body (POST) and the status answered. */
  readonly requests: { method: string; path: string; body?: Record<string, unknown>; status: number }[];
  /** Objects by stream (`contacts`, `companies`), as HubSpot stores them. */
  readonly data: Map<string, HubSpotObject[]>;
  /** Property names the account defines, by stream. */
  readonly properties: Map<string, string[]>;
  /** The next `times` requests get this status (with Retry-After when given). */
  failNext(status: number, times?: number, retryAfter?: string): void;
  close(): Promise<void>;
}

const modified: Record<string, string> = {
  contacts: 'lastmodifieddate',
  companies: 'hs_lastmodifieddate',
  deals: 'hs_lastmodifieddate',
};

const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) =>
  res
    .writeHead(status, { 'content-type': 'application/json;charset=utf-8', ...headers })
    .end(JSON.stringify(body));

const error = (res: ServerResponse, status: number, category: string, message: string) =>
  json(res, status, {
    status: 'error',
    message,
    correlationId: '00000000-0000-4000-8000-000000000000',
    category,
  });

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** A property value or the object's own field a filter or sort may name. */
function valueOf(object: HubSpotObject, property: string): string | null | undefined {
  if (property === 'hs_object_id') return object.id;
  return object.properties[property];
}

/** Dates compare as epoch ms (filters send ms or ISO), numbers as numbers, the rest as text. */
function comparable(value: string | null | undefined): number | string | undefined {
  if (value === null || value === undefined) return undefined;
  if (/^-?\d+(\.\d+)?$/.test(value)) return Number(value);
  const date = Date.parse(value);
  return /^\d{4}-\d{2}-\d{2}/.test(value) && !Number.isNaN(date) ? date : value;
}

/**
 * HubSpot CRM v3: `Authorization: Bearer <token>` (401 INVALID_AUTHENTICATION otherwise);
 * `GET /crm/v3/objects/{object}` with `limit` 1-100 (400 above), `after`, `properties`
 * (comma-separated; only the named ones come back, the defaults otherwise), `archived`, in id
 * order; `GET /crm/v3/properties/{object}`; `POST /crm/v3/objects/{object}/search` with
 * `filterGroups` (≤5 groups of ≤6 filters; EQ, NEQ, GT, GTE, LT, LTE), one sort, `limit` 1-200
 * and `after`, answering 400 once `after` + `limit` would pass 10,000 results, as HubSpot does.
 */
export async function startHubSpotLookAlike(options: { token?: string } = {}): Promise<HubSpotLookAlike> {
  const token = options.token ?? 'pat-na1-lookalike';
  const data = new Map<string, HubSpotObject[]>([
    ['contacts', []],
    ['companies', []],
    ['deals', []],
  ]);
  const properties = new Map<string, string[]>([
    ['contacts', ['email', 'firstname', 'lastname', 'createdate', 'lastmodifieddate', 'hs_object_id']],
    ['companies', ['name', 'domain', 'createdate', 'hs_lastmodifieddate', 'hs_object_id']],
    ['deals', ['dealname', 'amount', 'dealstage', 'createdate', 'hs_lastmodifieddate', 'hs_object_id']],
  ]);
  const defaults: Record<string, string[]> = {
    contacts: ['email', 'firstname', 'lastname', 'createdate', 'lastmodifieddate', 'hs_object_id'],
    companies: ['name', 'domain', 'createdate', 'hs_lastmodifieddate', 'hs_object_id'],
    deals: ['dealname', 'amount', 'dealstage', 'createdate', 'hs_lastmodifieddate', 'hs_object_id'],
  };
  const requests: HubSpotLookAlike['requests'] = [];
  const failures: { status: number; retryAfter?: string }[] = [];

  const shape = (object: HubSpotObject, wanted: string[]) => ({
    id: object.id,
    properties: Object.fromEntries(wanted.map((p) => [p, object.properties[p] ?? null])),
    createdAt: object.createdAt,
    updatedAt: object.updatedAt,
    archived: object.archived ?? false,
  });

  const handle = (req: IncomingMessage, url: URL, body: string, res: ServerResponse) => {
    if (req.headers.authorization !== `Bearer ${token}`)
      return error(
        res,
        401,
        'INVALID_AUTHENTICATION',
        'Authentication credentials not found. This API supports OAuth 2.0 authentication.',
      );
    const propertiesPath = /^\/crm\/v3\/properties\/(\w+)$/.exec(url.pathname);
    if (req.method === 'GET' && propertiesPath) {
      const names = properties.get(propertiesPath[1] ?? '');
      if (!names)
        return error(res, 400, 'VALIDATION_ERROR', `Unable to infer object type from: ${propertiesPath[1]}`);
      return json(res, 200, { results: names.map((name) => ({ name, type: 'string', fieldType: 'text' })) });
    }
    const objectsPath = /^\/crm\/v3\/objects\/(\w+)(\/search)?$/.exec(url.pathname);
    const stream = objectsPath?.[1] ?? '';
    const records = data.get(stream);
    if (!objectsPath || !records) return error(res, 404, 'OBJECT_NOT_FOUND', 'Resource not found');

    if (!objectsPath[2]) {
      if (req.method !== 'GET') return error(res, 405, 'METHOD_NOT_ALLOWED', 'Method not allowed');
      const q = url.searchParams;
      const limit = Number(q.get('limit') ?? '10');
      if (!Number.isInteger(limit) || limit < 1 || limit > 100)
        return error(res, 400, 'VALIDATION_ERROR', 'limit must be between 1 and 100');
      const wanted = q.get('properties')?.split(',').filter(Boolean) ?? defaults[stream] ?? [];
      const archived = q.get('archived') === 'true';
      const list = [...records]
        .filter((r) => (r.archived ?? false) === archived)
        .sort((a, b) => Number(a.id) - Number(b.id));
      const after = q.get('after');
      const start = after ? list.findIndex((r) => Number(r.id) >= Number(after)) : 0;
      const page = start < 0 ? [] : list.slice(start, start + limit);
      const more = start >= 0 && start + limit < list.length;
      const last = page.at(-1);
      return json(res, 200, {
        results: page.map((r) => shape(r, wanted)),
        ...(more && last
          ? {
              paging: {
                next: {
                  after: String(Number(last.id) + 1),
                  link: `${url.pathname}?after=${Number(last.id) + 1}`,
                },
              },
            }
          : {}),
      });
    }

    if (req.method !== 'POST') return error(res, 405, 'METHOD_NOT_ALLOWED', 'Method not allowed');
    if (!(req.headers['content-type'] ?? '').startsWith('application/json'))
      return error(res, 415, 'UNSUPPORTED_MEDIA_TYPE', 'Content-Type must be application/json');
    let search: Record<string, unknown>;
    try {
      search = JSON.parse(body) as Record<string, unknown>;
    } catch {
      return error(res, 400, 'VALIDATION_ERROR', 'Invalid input JSON');
    }
    const limit = search.limit === undefined ? 10 : Number(search.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > 200)
      return error(res, 400, 'VALIDATION_ERROR', 'limit must be between 1 and 200');
    const offset = search.after === undefined ? 0 : Number(search.after);
    if (!Number.isInteger(offset) || offset < 0)
      return error(res, 400, 'VALIDATION_ERROR', 'after must be a numeric offset');
    if (offset + limit > 10_000)
      return error(
        res,
        400,
        'VALIDATION_ERROR',
        'The maximum number of results for a search query is 10000; refine the query.',
      );
    const groups = Array.isArray(search.filterGroups) ? (search.filterGroups as { filters?: unknown }[]) : [];
    if (
      groups.length > 5 ||
      groups.some((g) => !Array.isArray(g.filters) || (g.filters as unknown[]).length > 6)
    )
      return error(res, 400, 'VALIDATION_ERROR', 'at most 5 filterGroups of at most 6 filters');
    const sorts = Array.isArray(search.sorts)
      ? (search.sorts as { propertyName?: string; direction?: string }[])
      : [];
    if (sorts.length > 1) return error(res, 400, 'VALIDATION_ERROR', 'only one sort is allowed');
    const tests: Record<string, (a: number | string, b: number | string) => boolean> = {
      EQ: (a, b) => a === b,
      NEQ: (a, b) => a !== b,
      GT: (a, b) => a > b,
      GTE: (a, b) => a >= b,
      LT: (a, b) => a < b,
      LTE: (a, b) => a <= b,
    };
    const matches = (object: HubSpotObject) =>
      groups.length === 0 ||
      groups.some((group) =>
        (group.filters as { propertyName?: string; operator?: string; value?: string }[]).every((f) => {
          const test = tests[f.operator ?? ''];
          const left = comparable(valueOf(object, f.propertyName ?? ''));
          const right = comparable(f.value);
          return !!test && left !== undefined && right !== undefined && test(left, right);
        }),
      );
    let list = records.filter((r) => !r.archived && matches(r));
    const sort = sorts[0];
    list = list.sort((a, b) => {
      if (!sort?.propertyName) return Number(a.id) - Number(b.id);
      const left = comparable(valueOf(a, sort.propertyName)) ?? '';
      const right = comparable(valueOf(b, sort.propertyName)) ?? '';
      const order = left < right ? -1 : left > right ? 1 : 0;
      return sort.direction === 'DESCENDING' ? -order : order;
    });
    const wanted = Array.isArray(search.properties)
      ? (search.properties as string[])
      : (defaults[stream] ?? []);
    const page = list.slice(offset, offset + limit);
    const next = offset + limit;
    return json(res, 200, {
      total: list.length,
      results: page.map((r) => shape(r, wanted)),
      ...(next < list.length ? { paging: { next: { after: String(next) } } } : {}),
    });
  };

  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    void readBody(req).then((body) => {
      let parsed: Record<string, unknown> | undefined;
      try {
        parsed = body ? (JSON.parse(body) as Record<string, unknown>) : undefined;
      } catch {
        parsed = undefined;
      }
      res.on('finish', () =>
        requests.push({
          method: req.method ?? 'GET',
          path: `${url.pathname}${url.search}`,
          ...(parsed ? { body: parsed } : {}),
          status: res.statusCode,
        }),
      );
      const failure = failures.shift();
      if (failure) {
        return json(
          res,
          failure.status,
          failure.status === 429
            ? {
                status: 'error',
                message: 'You have reached your secondly limit.',
                errorType: 'RATE_LIMIT',
                policyName: 'SECONDLY',
              }
            : { status: 'error', message: 'internal error', category: 'INTERNAL_ERROR' },
          failure.retryAfter ? { 'retry-after': failure.retryAfter } : {},
        );
      }
      handle(req, url, body, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    secret: token,
    requests,
    data,
    properties,
    failNext: (status, times = 1, retryAfter) => {
      for (let i = 0; i < times; i += 1) failures.push({ status, ...(retryAfter ? { retryAfter } : {}) });
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * HubSpot-shaped objects of a stream, ids from `from`, all last modified at `modifiedAt`
 * (or at `modifiedAt` + i seconds with `spread`).
 */
export function hubspotObjects(
  stream: string,
  count: number,
  modifiedAt: Date,
  options: { from?: number; spreadMs?: number } = {},
): HubSpotObject[] {
  const from = options.from ?? 1;
  return Array.from({ length: count }, (_, i): HubSpotObject => {
    const id = String(from + i);
    const updated = new Date(modifiedAt.getTime() + i * (options.spreadMs ?? 0)).toISOString();
    const created = new Date(modifiedAt.getTime() - 86_400_000).toISOString();
    return {
      id,
      createdAt: created,
      updatedAt: updated,
      archived: false,
      properties:
        stream === 'contacts'
          ? {
              email: `contact${id}@example.com`,
              firstname: `First ${id}`,
              lastname: null,
              createdate: created,
              [modified.contacts as string]: updated,
              hs_object_id: id,
            }
          : stream === 'deals'
            ? {
                dealname: `Deal ${id}`,
                amount: String(100 * Number(id)),
                dealstage: 'appointmentscheduled',
                createdate: created,
                hs_lastmodifieddate: updated,
                hs_object_id: id,
              }
            : {
                name: `Company ${id}`,
                domain: `company${id}.example`,
                createdate: created,
                [modified.companies as string]: updated,
                hs_object_id: id,
              },
    };
  });
}
