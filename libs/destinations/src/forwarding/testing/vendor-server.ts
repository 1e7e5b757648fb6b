import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ResolvedDestination } from '@pipeline/tenancy';
import type { Answer, Incoming, LookAlikeDefinition, VendorState } from './look-alike';
import { lookAlikes, type LookAlikeVendor } from './look-alikes';

// Local look-alikes of each vendor's HTTP API, strict where the vendor's docs are: a client that
// passes here sends what the vendor documents. Each answers bad auth and bad shapes with the
// vendor's own status and error body, records what it accepted, and can be told to fail, stall
// or reject items. A vendor's rules live in its folder (vendors/<vendor>/<vendor>-look-alike.ts);
// this server records and scripts the same way for all of them.

export type { LookAlikeVendor } from './look-alikes';

export interface RecordedRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  headers: IncomingHttpHeaders;
  body: string;
  /** The status the server answered. */
  status: number;
}

/** An item (event, record, object, message, user update) the vendor took. */
export interface AcceptedItem {
  /** Which part of the API took it: '/2/httpapi', 'events', 'purchases', 'custom_events', ... */
  endpoint: string;
  item: Record<string, unknown>;
}

export interface ScriptedAnswer {
  status: number;
  /** The Retry-After header's value. */
  retryAfter?: string;
  headers?: Record<string, string>;
  /** Replaces the vendor's own error body for this status. */
  body?: unknown;
}

export interface LookAlikeServer {
  readonly vendor: LookAlikeVendor;
  /** The base URL to configure a forwarder with (the hook URL, for the webhook). */
  readonly url: string;
  readonly requests: RecordedRequest[];
  readonly accepted: AcceptedItem[];
  /** Items answered with success but not ingested (Segment drops what it cannot use). */
  readonly dropped: AcceptedItem[];
  /** The credentials this server accepts. */
  readonly credentials: Record<string, string>;
  /** Answers the next `times` requests with `answer`, before looking at them. */
  failNext(answer: ScriptedAnswer, times?: number): void;
  /** Lets the next `times` requests be handled normally, ahead of failures scripted after this. */
  passNext(times: number): void;
  /** Holds the answer of the next `times` requests for `ms`. */
  delayNext(ms: number, times?: number): void;
  /** From now on, the vendor reports the items matching `predicate` as failed, its own way. */
  rejectItems(predicate: (item: Record<string, unknown>, endpoint: string) => boolean, reason?: string): void;
  close(): Promise<void>;
}

const definitions = new Map<string, LookAlikeDefinition>(
  lookAlikes.map((definition) => [definition.vendor, definition]),
);
function definitionOf(vendor: LookAlikeVendor): LookAlikeDefinition {
  const definition = definitions.get(vendor);
  if (!definition) throw new Error(`no look-alike of ${vendor}`);
  return definition;
}

/** The credentials each look-alike accepts unless told otherwise. */
export const lookAlikeCredentials = Object.fromEntries(
  lookAlikes.map((definition) => [definition.vendor, definition.credentials]),
) as Record<LookAlikeVendor, Record<string, string>>;

/**
 * A destination whose credentials and config this server accepts. Configure the forwarder
 * with `baseUrls: { [server.vendor]: server.url }` (the webhook's URL is in the config).
 */
export function lookAlikeDestination(
  server: LookAlikeServer,
  overrides: Partial<Pick<ResolvedDestination, 'credentials' | 'appConfig' | 'config'>> = {},
): ResolvedDestination {
  const definition = definitionOf(server.vendor);
  return {
    integrationId: `int-${server.vendor}`,
    kind: definition.kind,
    appId: `app-${server.vendor}`,
    appType: server.vendor,
    dataType: 'events',
    config: { global: {}, tasks: [{ task_type: 'forward' }] },
    credentials: definition.destinationCredentials?.(server.credentials) ?? { ...server.credentials },
    appConfig: definition.appConfig?.(server.url) ?? {},
    ...overrides,
  };
}

/** Requests larger than any vendor takes are cut off instead of buffered. */
const MAX_REQUEST_BYTES = 25 * 1024 * 1024;

/** Starts the look-alike of `vendor` on a free port of 127.0.0.1. */
export async function startLookAlikeVendor(
  vendor: LookAlikeVendor,
  options: { credentials?: Record<string, string> } = {},
): Promise<LookAlikeServer> {
  const definition = definitionOf(vendor);
  const credentials = options.credentials ?? definition.credentials;
  const requests: RecordedRequest[] = [];
  const accepted: AcceptedItem[] = [];
  const dropped: AcceptedItem[] = [];
  const failures: (ScriptedAnswer | 'pass')[] = [];
  const delays: number[] = [];
  const rejections: {
    predicate: (item: Record<string, unknown>, endpoint: string) => boolean;
    reason: string;
  }[] = [];
  const state: VendorState = {
    expected: credentials,
    accept: (endpoint, item) => accepted.push({ endpoint, item }),
    drop: (endpoint, item) => dropped.push({ endpoint, item }),
    rejection: (item, endpoint) => rejections.find((r) => r.predicate(item, endpoint))?.reason,
    store: new Map(),
  };

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_REQUEST_BYTES) req.destroy();
      else chunks.push(chunk);
    });
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://look-alike');
      const incoming: Incoming = {
        method: req.method ?? 'GET',
        path: url.pathname,
        query: url.searchParams,
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      };
      const next = failures.shift();
      const scripted = next === 'pass' ? undefined : next;
      const answer: Answer = scripted
        ? {
            status: scripted.status,
            body: scripted.body ?? definition.scriptedBody(scripted.status),
            headers: {
              ...(scripted.retryAfter ? { 'Retry-After': scripted.retryAfter } : {}),
              ...scripted.headers,
            },
          }
        : definition.handle(incoming, state);
      requests.push({
        method: incoming.method,
        path: incoming.path,
        query: Object.fromEntries(url.searchParams),
        headers: incoming.headers,
        body: incoming.body,
        status: answer.status,
      });
      const text =
        answer.body === undefined
          ? ''
          : typeof answer.body === 'string'
            ? answer.body
            : JSON.stringify(answer.body);
      const send = () => {
        res.writeHead(answer.status, {
          ...(typeof answer.body === 'object'
            ? { 'Content-Type': 'application/json' }
            : { 'Content-Type': 'text/plain' }),
          ...answer.headers,
        });
        res.end(text);
      };
      const delay = delays.shift();
      if (delay) setTimeout(send, delay).unref();
      else send();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const base = `http://127.0.0.1:${port}`;

  return {
    vendor,
    url: `${base}${definition.urlPath ?? ''}`,
    requests,
    accepted,
    dropped,
    credentials,
    failNext(answer, times = 1) {
      for (let i = 0; i < times; i += 1) failures.push(answer);
    },
    passNext(times) {
      for (let i = 0; i < times; i += 1) failures.push('pass');
    },
    delayNext(ms, times = 1) {
      for (let i = 0; i < times; i += 1) delays.push(ms);
    },
    rejectItems(predicate, reason = 'rejected by the vendor') {
      rejections.push({ predicate, reason });
    },
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}
