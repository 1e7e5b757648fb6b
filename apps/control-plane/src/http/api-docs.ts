import express, { type Router } from 'express';
import swaggerUi from 'swagger-ui-express';

export const API_DOCS_PATH = '/docs';

/**
 * What every answer under /docs carries: Swagger UI runs from this origin's own scripts and
 * styles (no inline code, so no 'unsafe-inline' or 'unsafe-eval'), reads the API document and
 * sends "Try it out" requests to this origin only, draws its icons from data: URIs, and cannot
 * be framed or post forms anywhere.
 */
export const API_DOCS_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/** The other headers of a page that holds an API key typed into "Authorize". */
const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'Content-Security-Policy': API_DOCS_CSP,
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'X-Frame-Options': 'DENY',
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Resource-Policy': 'same-origin',
};

// swagger-ui-express's page has inline <style> blocks and a style attribute, which a strict
// CSP refuses; this page has none, and its script is a file.
const PAGE = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<title>Pipeline control plane API</title>
<link rel="stylesheet" type="text/css" href="./swagger-ui.css">
<link rel="stylesheet" type="text/css" href="./index.css">
<link rel="icon" type="image/png" href="./favicon-32x32.png" sizes="32x32">
<link rel="icon" type="image/png" href="./favicon-16x16.png" sizes="16x16">
</head>
<body>
<div id="swagger-ui"></div>
<script src="./swagger-ui-bundle.js"></script>
<script src="./api-docs.js"></script>
</body>
</html>
`;

// BaseLayout has no top bar, so there is no box to load another document from; validatorUrl
// null keeps the page from calling validator.swagger.io.
const SCRIPT = `window.addEventListener('load', function () {
  window.ui = SwaggerUIBundle({
    url: '/api/v1/openapi.json',
    dom_id: '#swagger-ui',
    deepLinking: true,
    presets: [SwaggerUIBundle.presets.apis],
    layout: 'BaseLayout',
    validatorUrl: null,
  });
});
`;

/** The files of swagger-ui-dist the page loads; nothing else of the package is served. */
const ASSETS = new Set([
  '/swagger-ui.css',
  '/index.css',
  '/swagger-ui-bundle.js',
  '/favicon-32x32.png',
  '/favicon-16x16.png',
]);

/**
 * The browsable API reference at /docs/: Swagger UI's own files from the package (no CDN), a
 * page and a start script of ours, every answer with a strict CSP (docs/management-api.md).
 */
export function apiDocsRouter(): Router {
  const router = express.Router();
  const [, assets] = swaggerUi.serveWithOptions({ index: false, fallthrough: true, redirect: false });
  router.use(API_DOCS_PATH, (req, res, next) => {
    res.set(SECURITY_HEADERS);
    // /docs (no slash) -> /docs/, so the page's relative asset URLs resolve under it.
    if (req.originalUrl === API_DOCS_PATH || req.originalUrl.startsWith(`${API_DOCS_PATH}?`)) {
      res.redirect(301, `${API_DOCS_PATH}/`);
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      next();
      return;
    }
    if (req.path === '/' || req.path === '/index.html') {
      res.set('Cache-Control', 'no-cache').type('html').send(PAGE);
      return;
    }
    if (req.path === '/api-docs.js') {
      res.set('Cache-Control', 'no-cache').type('application/javascript').send(SCRIPT);
      return;
    }
    if (ASSETS.has(req.path) && assets) {
      assets(req, res, next);
      return;
    }
    next();
  });
  return router;
}
