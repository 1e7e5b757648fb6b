/** What the tracking host answered to one POST /collect, or null when it could not be reached. */
export interface Answer {
  status: number;
  /** The parsed JSON body, or null. */
  body: unknown;
  /** The Retry-After header (exposed by the host's CORS settings). */
  retryAfter: string | null;
}

export type Outcome =
  { kind: 'sent' } | { kind: 'retry'; reason: string; afterMs?: number } | { kind: 'drop'; reason: string };

export const backoff = { baseMs: 1000, maxMs: 60_000 } as const;
/** A server's Retry-After longer than this is taken as this (a day limit resets at midnight UTC). */
const MAX_SERVER_DELAY_MS = 24 * 60 * 60 * 1000;

/** Retry-After as seconds or as an HTTP date (RFC 9110), or the body's `retryAfter` seconds. */
function serverDelayMs(answer: Answer, now: number): number | undefined {
  const fromBody = (answer.body as { retryAfter?: unknown } | null)?.retryAfter;
  let ms: number | undefined;
  if (typeof fromBody === 'number' && Number.isFinite(fromBody) && fromBody >= 0) ms = fromBody * 1000;
  else if (answer.retryAfter) {
    const header = answer.retryAfter.trim();
    ms = /^\d+$/.test(header) ? Number(header) * 1000 : Date.parse(header) - now;
    if (!Number.isFinite(ms)) ms = undefined;
  }
  return ms === undefined ? undefined : Math.min(MAX_SERVER_DELAY_MS, Math.max(0, ms));
}

function describe(answer: Answer): string {
  const error = (answer.body as { error?: unknown } | null)?.error;
  return typeof error === 'string' ? `${answer.status} ${error}` : String(answer.status);
}

/**
 * What to do with a batch after an answer (docs/sdk.md#delivery): 2xx is done; 429, 503 and the other 5xx,
 * 408 and a network failure are tried again; any other 4xx would fail the same way every time
 * (a wrong write key, a refused origin), so the batch is dropped.
 */
export function outcomeOf(answer: Answer | null, now: number): Outcome {
  if (!answer) return { kind: 'retry', reason: 'network error' };
  const { status } = answer;
  if (status >= 200 && status < 300) return { kind: 'sent' };
  if (status >= 400 && status < 500 && status !== 408 && status !== 429) {
    return { kind: 'drop', reason: describe(answer) };
  }
  const afterMs = serverDelayMs(answer, now);
  return afterMs === undefined
    ? { kind: 'retry', reason: describe(answer) }
    : { kind: 'retry', reason: describe(answer), afterMs };
}

/**
 * The wait before attempt `attempt + 1`. Without a word from the server: exponential from 1 s
 * up to 60 s with "equal jitter" (half fixed, half random) so clients that failed together do
 * not retry together. With the server's Retry-After: that wait, which knows when the limit
 * resets, plus up to a fifth more (at most 30 s) for the same spread, never less.
 * `random` is in [0, 1).
 */
export function retryDelayMs(attempt: number, serverAfterMs: number | undefined, random: number): number {
  if (serverAfterMs !== undefined) {
    return Math.round(serverAfterMs + random * Math.min(serverAfterMs / 5, 30_000));
  }
  const exponential = Math.min(backoff.maxMs, backoff.baseMs * 2 ** Math.max(0, attempt - 1));
  return Math.round(exponential / 2 + (random * exponential) / 2);
}
