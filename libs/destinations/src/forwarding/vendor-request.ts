import { describeNetworkFailure, parseRetryAfter } from '@pipeline/egress';

/** One HTTP call to a vendor, fully built. */
export interface VendorRequest {
  /**
   * GET for what a send must look up first (HubSpot's property list) and for a deletion's
   * status, DELETE for a deletion by path (OneSignal): the body of either is not sent.
   */
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  url: string;
  headers: Record<string, string>;
  body: string;
}

export interface VendorResponse {
  status: number;
  headers: Headers;
  text: string;
  /** The body parsed as JSON, or undefined when it is not JSON. */
  json: unknown;
}

/** Why a request did not go through, and whether trying again later may work. */
export interface RequestFailure {
  /**
   * What the tenant may see (lastError, job errors, dead letters): a category and a status,
   * never the remote body nor the address a connection was refused for.
   */
  reason: string;
  /** The remote body or the socket error, for logs only. */
  detail?: string;
  retryable: boolean;
  status?: number;
  retryAfterMs?: number;
  /**
   * Every other request would fail the same way (a wrong or revoked key): the rest of the send
   * is abandoned instead of being tried request by request.
   */
  fatal?: boolean;
}

/** A vendor request's outcome for metrics: the answer's status class, or no answer at all. */
export type VendorStatusClass = '1xx' | '2xx' | '3xx' | '4xx' | '5xx' | 'network';

export const statusClassOf = (status: number): VendorStatusClass =>
  status >= 100 && status < 600 ? (`${Math.floor(status / 100)}xx` as VendorStatusClass) : 'network';

export interface VendorHttp {
  fetch: typeof fetch;
  timeoutMs: number;
  signal?: AbortSignal;
  /** Webhooks do not follow redirects: the customer's URL is the only place their data may go. */
  redirect?: 'follow' | 'manual';
  /** Requests one send may make by halving after 413s (batch-delivery.ts, defaultMaxSplitRequests). */
  maxSplitRequests?: number;
  /** Told of each request's outcome (ForwarderOptions.onResponse). */
  onResponse?: (statusClass: VendorStatusClass) => void;
}

/** HTTP Basic credentials; an empty password still keeps its colon. */
export const basicAuth = (user: string, password: string) =>
  `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

/** Vendor answers are small; a receiver that streams more is cut off rather than buffered. */
const MAX_RESPONSE_BYTES = 64 * 1024;
const MAX_REASON_CHARS = 300;

async function readCapped(response: Response): Promise<string> {
  if (!response.body) return '';
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    size += value.byteLength;
    if (size >= MAX_RESPONSE_BYTES) {
      await reader.cancel();
      break;
    }
  }
  return Buffer.concat(chunks).subarray(0, MAX_RESPONSE_BYTES).toString('utf8');
}

/**
 * Sends one request. A failure to get an answer (refused, reset, DNS, timeout, aborted) comes
 * back as a retryable RequestFailure; any HTTP answer comes back as a VendorResponse for the
 * vendor client to judge.
 */
export async function callVendor(
  http: VendorHttp,
  request: VendorRequest,
): Promise<VendorResponse | RequestFailure> {
  const timeout = AbortSignal.timeout(http.timeoutMs);
  const signal = http.signal ? AbortSignal.any([http.signal, timeout]) : timeout;
  let answered = false;
  try {
    const response = await http.fetch(request.url, {
      method: request.method,
      headers: request.headers,
      ...(request.method === 'GET' || request.method === 'DELETE' ? {} : { body: request.body }),
      signal,
      redirect: http.redirect ?? 'follow',
    });
    answered = true;
    http.onResponse?.(statusClassOf(response.status));
    const text = await readCapped(response);
    let json: unknown;
    try {
      json = text.length > 0 ? JSON.parse(text) : undefined;
    } catch {
      json = undefined;
    }
    return { status: response.status, headers: response.headers, text, json };
  } catch (error) {
    // Thrown before an answer (a body cut off after it is the answer's, counted already).
    if (!answered) http.onResponse?.('network');
    if (http.signal?.aborted) return { reason: abortReason(http.signal), retryable: true };
    if (timeout.aborted) return { reason: `timeout: no answer within ${http.timeoutMs} ms`, retryable: true };
    const { category, detail } = describeNetworkFailure(error);
    // An internal address stays refused however often it is tried.
    return { reason: category, detail, retryable: category !== 'address_refused' };
  }
}

/** A send stopped by its time budget (an AbortSignal.timeout) or by its caller. */
export function abortReason(signal: AbortSignal): string {
  // Duck-typed: the DOMException may come from another realm than this module's Error.
  const { name } = (signal.reason ?? {}) as { name?: unknown };
  return name === 'TimeoutError' ? 'time_budget_exceeded: the send outlasted its time budget' : 'aborted';
}

export function isRequestFailure(value: VendorResponse | RequestFailure): value is RequestFailure {
  return 'reason' in value;
}

/** The shortest useful description of a vendor's error answer, for logs. */
export function describeAnswer(response: VendorResponse): string {
  const body = response.json;
  if (body !== null && typeof body === 'object' && !Array.isArray(body)) {
    const fields = body as Record<string, unknown>;
    for (const key of ['error', 'message', 'title']) {
      const value = fields[key];
      if (typeof value === 'string' && value.length > 0) return value.slice(0, MAX_REASON_CHARS);
    }
  }
  const text = response.text.trim();
  return text.length > 0 ? text.slice(0, MAX_REASON_CHARS) : 'no body';
}

export interface StatusPolicy {
  /** Statuses meaning every request would fail (bad key): 401 and 403 unless a vendor adds more. */
  fatalStatuses?: readonly number[];
  /** What to wait after a 429 that came without Retry-After (a vendor's documented pause). */
  defaultRetryAfterMs?: number;
  /** A vendor-specific hint when Retry-After is absent (Braze's X-RateLimit-Reset). */
  retryAfterFallback?: (response: VendorResponse) => number | undefined;
}

/**
 * The common reading of a non-success status: 408, 429 and 5xx may pass later; any other 4xx
 * will fail the same way again.
 */
export function failureOfStatus(response: VendorResponse, policy: StatusPolicy = {}): RequestFailure {
  const { status } = response;
  const retryable = status === 408 || status === 429 || status >= 500;
  const fatal = (policy.fatalStatuses ?? [401, 403]).includes(status);
  const failure: RequestFailure = {
    reason: `http_${status}`,
    detail: describeAnswer(response),
    retryable,
    status,
    ...(fatal ? { fatal } : {}),
  };
  if (retryable) {
    const retryAfterMs =
      parseRetryAfter(response.headers.get('retry-after')) ??
      policy.retryAfterFallback?.(response) ??
      (status === 429 ? policy.defaultRetryAfterMs : undefined);
    if (retryAfterMs !== undefined) failure.retryAfterMs = retryAfterMs;
  }
  return failure;
}
