/** Headers still sent when a redirect leaves the origin: never credentials or signatures. */
const CROSS_ORIGIN_HEADERS = new Set(['accept', 'accept-language', 'user-agent']);
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

/**
 * Whether a request follows redirects itself: a GET or HEAD unless told otherwise. Any other
 * method gets the 3xx answer, never a replay of its body elsewhere.
 */
export function followsRedirects(init: Pick<RequestInit, 'method' | 'redirect'>): boolean {
  const method = (init.method ?? 'GET').toUpperCase();
  return (init.redirect ?? 'follow') === 'follow' && (method === 'GET' || method === 'HEAD');
}

/** Refuses, as fetch does a network failure, a URL that is not http(s) (a redirect to file:). */
export function assertHttpScheme(url: URL): void {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new TypeError('fetch failed', { cause: new Error(`refused the scheme ${url.protocol}`) });
  }
}

/** Whether an answer is a redirect to follow: a redirect status with a Location. */
export function isRedirect(status: number, location: string | null): location is string {
  return REDIRECT_STATUSES.has(status) && location !== null;
}

/**
 * The URL a redirect leads to, relative to the one answered. Throws, as fetch does a network
 * failure, once maxRedirects hops were followed.
 */
export function redirectTarget(location: string, from: URL, hop: number, maxRedirects: number): URL {
  if (hop >= maxRedirects) {
    throw new TypeError('fetch failed', { cause: new Error(`more than ${maxRedirects} redirects`) });
  }
  return new URL(location, from);
}

/** The headers of the next hop: all of them on the same origin, none that authenticate elsewhere. */
export function headersForHop(headers: Headers, from: URL, to: URL): Headers {
  if (to.origin === from.origin) return headers;
  return new Headers([...headers].filter(([name]) => CROSS_ORIGIN_HEADERS.has(name)));
}
