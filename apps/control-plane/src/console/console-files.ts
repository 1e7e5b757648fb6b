import { existsSync } from 'node:fs';
import path from 'node:path';
import express, { type Router } from 'express';

export const CONSOLE_PATH = '/console';

/**
 * What every answer under /console carries: nothing but this origin's own scripts, styles and
 * API, no inline code, no framing, no forms posting elsewhere (docs/console.md).
 */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self' data:",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** The built console (@pipeline/console's dist/), or null when it is not built. */
export function consoleDirectory(): string | null {
  try {
    const dir = path.join(path.dirname(require.resolve('@pipeline/console/package.json')), 'dist');
    return existsSync(path.join(dir, 'index.html')) ? dir : null;
  } catch {
    return null;
  }
}

/**
 * Serves the console's static files at /console/: index.html never cached (it names the
 * current hashed bundles), the hashed bundles cached for a year. Without a built console,
 * /console answers 404 with a hint.
 */
export function consoleRouter(dir: string | null = consoleDirectory()): Router {
  const router = express.Router();
  router.use(CONSOLE_PATH, (req, res, next) => {
    res.setHeader('Content-Security-Policy', CONSOLE_CSP);
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('Referrer-Policy', 'no-referrer');
    res.setHeader('X-Frame-Options', 'DENY');
    res.setHeader('Cross-Origin-Opener-Policy', 'same-origin');
    // /console (no slash) -> /console/, so the page's relative asset URLs resolve under it.
    if (req.originalUrl === CONSOLE_PATH || req.originalUrl.startsWith(`${CONSOLE_PATH}?`)) {
      res.redirect(301, `${CONSOLE_PATH}/`);
      return;
    }
    next();
  });
  if (!dir) {
    router.use(CONSOLE_PATH, (_req, res) => {
      res
        .status(404)
        .type('text/plain')
        .send('The console is not built: pnpm nx run @pipeline/console:build\n');
    });
    return router;
  }
  router.use(
    CONSOLE_PATH,
    express.static(dir, {
      index: 'index.html',
      redirect: false,
      fallthrough: true,
      setHeaders(res, file) {
        res.setHeader(
          'Cache-Control',
          path.basename(file) === 'index.html' ? 'no-cache' : 'public, max-age=31536000, immutable',
        );
      },
    }),
  );
  router.use(CONSOLE_PATH, (_req, res) => {
    res.status(404).type('text/plain').send('Not found\n');
  });
  return router;
}
