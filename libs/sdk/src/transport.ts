import type { Transport } from './delivery';

/** The browser's fetch and sendBeacon. */
export const browserTransport: Transport = {
  async post(url, body, writeKey, keepalive) {
    try {
      const response = await fetch(url, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'X-Write-Key': writeKey },
        body,
        keepalive,
        credentials: 'omit',
      });
      let parsed: unknown = null;
      try {
        parsed = await response.json();
      } catch {
        // A body that is not JSON (a proxy's error page) still has a status to act on.
      }
      return { status: response.status, body: parsed, retryAfter: response.headers.get('Retry-After') };
    } catch {
      return null;
    }
  },
  beacon(url, body) {
    // text/plain is one of the types a beacon may carry without a CORS preflight, which a
    // beacon cannot make; the host reads the body as JSON whatever its type, and the write
    // key travels in the body since a beacon cannot set headers.
    if (typeof navigator.sendBeacon === 'function') {
      try {
        return navigator.sendBeacon(url, body);
      } catch {
        return false;
      }
    }
    if (typeof fetch !== 'function') return false;
    fetch(url, {
      method: 'POST',
      body,
      keepalive: true,
      credentials: 'omit',
      headers: { 'Content-Type': 'text/plain' },
    }).catch(() => undefined);
    return true;
  },
};
