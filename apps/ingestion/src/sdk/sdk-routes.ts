import { Router, type Request } from 'express';
import type { SdkFile } from './sdk-file';
import { renderSnippet } from './snippet';

const firstValue = (header: string | string[] | undefined) =>
  (Array.isArray(header) ? header[0] : header)?.split(',')[0]?.trim();

/** The tracking host as the client sees it, through a CDN or load balancer if any. */
export function detectHost(req: Request): string {
  const proto =
    firstValue(req.headers['x-forwarded-proto']) ??
    (req.socket && 'encrypted' in req.socket ? 'https' : 'http');
  const host = firstValue(req.headers['x-forwarded-host']) ?? req.headers.host ?? 'localhost';
  return `${proto === 'https' ? 'https' : 'http'}://${host}`;
}

function validHost(value: string): string | null {
  try {
    const url = new URL(value);
    return ['http:', 'https:'].includes(url.protocol) ? url.origin : null;
  } catch {
    return null;
  }
}

/**
 * Browsers keep the SDK an hour (spec: a 1-hour cache header), CDNs a day, and either may serve
 * a stale copy for a week while revalidating with the ETag (a 304). Set here, not at the
 * Ingress, so no nginx snippet annotation is needed.
 */
export const SDK_CACHE_CONTROL = 'public, max-age=3600, s-maxage=86400, stale-while-revalidate=604800';

export function sdkRoutes(sdk: SdkFile | null): Router {
  const router = Router();
  router.get('/v1/sdk.js', (req, res) => {
    if (!sdk) {
      res.status(404).json({ ok: false, error: 'sdk_not_found' });
      return;
    }
    res.setHeader('Cache-Control', SDK_CACHE_CONTROL);
    res.setHeader('ETag', sdk.etag);
    if (req.headers['if-none-match'] === sdk.etag) {
      res.status(304).end();
      return;
    }
    res.type('application/javascript; charset=utf-8').send(sdk.body);
  });
  router.get('/v1/snippet', (req, res) => {
    const writeKey =
      typeof req.query.writeKey === 'string' && req.query.writeKey ? req.query.writeKey : 'YOUR_WRITE_KEY';
    const requested = typeof req.query.host === 'string' ? validHost(req.query.host) : null;
    if (typeof req.query.host === 'string' && !requested) {
      res
        .status(400)
        .json({ ok: false, error: 'invalid_host', details: [{ message: 'host must be an http(s) URL' }] });
      return;
    }
    res.setHeader('Cache-Control', 'no-store');
    // The block is HTML to paste into a page, not a page of ours: served as text that no
    // browser renders or runs, so a `host` of anyone's choosing cannot put another site's
    // script on the tracking origin (nosniff stops sniffing it back to HTML; the sandbox CSP
    // holds even where a browser would render it).
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('Content-Security-Policy', "sandbox; default-src 'none'");
    res.type('text/plain; charset=utf-8').send(renderSnippet(writeKey, requested ?? detectHost(req)));
  });
  return router;
}
