import { describeNetworkFailure, parseRetryAfter } from '@pipeline/egress';
import pRetry from 'p-retry';
import { ConnectorError } from './connector';

export interface HttpReaderOptions {
  fetch?: typeof fetch;
  timeoutMs?: number;
  /** Attempts of one request in all (429, 5xx, network); then a retryable ConnectorError. */
  attempts?: number;
  /** The first backoff step; p-retry doubles it per attempt. */
  minDelayMs?: number;
  /** Waits out a vendor's Retry-After (and HubSpot's search pacing); a timer unless a test records the waits. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

export interface JsonResponse<T> {
  body: T;
  headers: Headers;
}

class RetryableStatus extends Error {
  constructor(
    readonly status: number,
    readonly retryAfterMs: number | undefined,
    readonly detail: string,
  ) {
    super(`answered ${status}`);
  }
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(timer);
      reject(new Error('aborted'));
    });
  });

/**
 * GETs JSON from a vendor API, retrying 429, 5xx and network errors with exponential backoff
 * (p-retry), at least the vendor's Retry-After. 401/403 become `invalid_credentials` and other
 * 4xx `request_rejected`, both permanent.
 */
export async function getJson<T>(
  vendor: string,
  url: URL,
  headers: Record<string, string>,
  options: HttpReaderOptions & { signal?: AbortSignal },
): Promise<JsonResponse<T>> {
  return requestJson<T>(vendor, url, headers, options);
}

/**
 * POSTs a JSON body and reads a JSON answer (read-only query endpoints such as HubSpot's
 * search), with getJson's retries: safe to repeat, since the request changes nothing.
 */
export async function postJson<T>(
  vendor: string,
  url: URL,
  headers: Record<string, string>,
  body: unknown,
  options: HttpReaderOptions & { signal?: AbortSignal },
): Promise<JsonResponse<T>> {
  return requestJson<T>(vendor, url, headers, options, JSON.stringify(body));
}

async function requestJson<T>(
  vendor: string,
  url: URL,
  headers: Record<string, string>,
  options: HttpReaderOptions & { signal?: AbortSignal },
  body?: string,
): Promise<JsonResponse<T>> {
  const doFetch = options.fetch ?? globalThis.fetch;
  return pRetry(
    async () => {
      let response: Response;
      try {
        response = await doFetch(url, {
          ...(body === undefined
            ? { headers: { accept: 'application/json', ...headers } }
            : {
                method: 'POST',
                body,
                headers: { accept: 'application/json', 'content-type': 'application/json', ...headers },
              }),
          signal: AbortSignal.any([
            AbortSignal.timeout(options.timeoutMs ?? 30_000),
            ...(options.signal ? [options.signal] : []),
          ]),
        });
      } catch (error) {
        if (options.signal?.aborted)
          throw new pRetry.AbortError(new ConnectorError('cancelled', 'the read was cancelled', false));
        const { category, detail } = describeNetworkFailure(error);
        if (category === 'address_refused')
          throw new pRetry.AbortError(
            new ConnectorError(
              category,
              `${vendor}: the host is not a public address`,
              false,
              undefined,
              detail,
            ),
          );
        throw new ConnectorError('network_error', `${vendor}: ${category}`, true, undefined, detail);
      }
      const text = await response.text();
      if (response.ok) {
        try {
          return { body: JSON.parse(text) as T, headers: response.headers };
        } catch {
          throw new ConnectorError(
            'invalid_response',
            `${vendor} answered ${response.status} with a body that is not JSON`,
            true,
          );
        }
      }
      const detail = text.slice(0, 300);
      if (response.status === 429 || response.status >= 500) {
        throw new RetryableStatus(
          response.status,
          parseRetryAfter(response.headers.get('retry-after')),
          detail,
        );
      }
      const code =
        response.status === 401 || response.status === 403 ? 'invalid_credentials' : 'request_rejected';
      throw new pRetry.AbortError(
        new ConnectorError(code, `${vendor} answered ${response.status}`, false, response.status, detail),
      );
    },
    {
      retries: (options.attempts ?? 5) - 1,
      minTimeout: options.minDelayMs ?? 500,
      factor: 2,
      randomize: true,
      onFailedAttempt: async (error) => {
        // p-retry waits its own backoff after this; a longer Retry-After is waited here first.
        const wait = error instanceof RetryableStatus ? error.retryAfterMs : undefined;
        if (wait && error.retriesLeft > 0) await (options.sleep ?? sleep)(wait, options.signal);
      },
    },
  ).catch((error: unknown) => {
    if (error instanceof ConnectorError) throw error;
    if (error instanceof RetryableStatus)
      throw new ConnectorError(
        error.status === 429 ? 'rate_limited' : 'vendor_unavailable',
        `${vendor} ${error.message}`,
        true,
        error.status,
        error.detail,
      );
    throw error;
  });
}
