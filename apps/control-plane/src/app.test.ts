import { PassThrough } from 'node:stream';
import request from 'supertest';
import { createLogger } from '@pipeline/logger';
import { createApp } from './composition';
import { createMigratedScratchDatabase } from './scratch-data-source';
import { startHarness, TEST_CREDENTIAL_KEYS, TEST_INTERNAL_TOKENS, type Harness } from './testing/harness';

describe('control plane HTTP (real PostgreSQL)', () => {
  let harness: Harness;

  beforeAll(async () => {
    harness = await startHarness('control plane app');
  });
  afterAll(() => harness.close());

  it('GET /health answers 200 while the database answers', async () => {
    const response = await request(harness.app).get('/health');
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ ok: true, database: 'up' });
    expect(response.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('serves the tsoa-generated OpenAPI 3 document', async () => {
    const response = await request(harness.app).get('/api/v1/openapi.json');
    expect(response.status).toBe(200);
    expect(response.body.openapi).toMatch(/^3\./);
    expect(response.body.paths['/health'].get).toBeDefined();
    expect(response.body.components.securitySchemes.api_key).toMatchObject({
      type: 'http',
      scheme: 'bearer',
    });
  });

  it('serves a browsable API reference at /docs, with its assets', async () => {
    const page = await request(harness.app).get('/docs/');
    expect(page.status).toBe(200);
    expect(page.text).toContain('<div id="swagger-ui"></div>');
    expect((await request(harness.app).get('/docs/swagger-ui.css')).status).toBe(200);
    expect((await request(harness.app).get('/docs/swagger-ui-bundle.js')).status).toBe(200);
    expect((await request(harness.app).get('/docs/api-docs.js')).text).toContain(
      "url: '/api/v1/openapi.json'",
    );
    expect((await request(harness.app).get('/docs')).headers.location).toBe('/docs/');
  });

  it('serves /docs with a strict Content-Security-Policy and the usual headers, and no inline code', async () => {
    const strict = {
      'content-security-policy':
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
        "base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
      'x-content-type-options': 'nosniff',
      'referrer-policy': 'no-referrer',
      'x-frame-options': 'DENY',
      'cross-origin-opener-policy': 'same-origin',
    };
    for (const path of [
      '/docs/',
      '/docs/api-docs.js',
      '/docs/swagger-ui.css',
      '/docs/swagger-ui-bundle.js',
    ]) {
      const response = await request(harness.app).get(path);
      expect({ path, status: response.status, ...response.headers }).toMatchObject({
        path,
        status: 200,
        ...strict,
      });
    }
    const page = (await request(harness.app).get('/docs/')).text;
    // Inline code is what the policy refuses: the page has none.
    expect(page).not.toMatch(/<style|style=|<script>|<script(?![^>]*\bsrc=)[^>]*>/);
    // Only the files the page loads come from the package; its demo page and initializer do not.
    for (const path of ['/docs/swagger-initializer.js', '/docs/oauth2-redirect.html', '/docs/package.json'])
      expect((await request(harness.app).get(path)).status).toBe(404);
  });

  it('answers unknown routes with a 404 problem document carrying the request id', async () => {
    const response = await request(harness.app).get('/api/v1/nothing-here').set('X-Request-Id', 'req-404');
    expect(response.status).toBe(404);
    expect(response.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(response.body).toEqual({
      type: 'urn:pipeline:problem:not_found',
      title: 'Not Found',
      status: 404,
      detail: 'No route for GET /api/v1/nothing-here',
      code: 'not_found',
      requestId: 'req-404',
    });
  });

  it('answers a malformed JSON body with 400 invalid_json, not 500', async () => {
    const response = await request(harness.app)
      .post('/api/v1/apps')
      .set('Content-Type', 'application/json')
      .send('{"displayName": ');
    expect(response.status).toBe(400);
    expect(response.body).toMatchObject({ code: 'invalid_json', status: 400 });
    expect(JSON.stringify(response.body)).not.toMatch(/at .*\.js|stack/i);
  });

  it('answers a body over 1 MB with 413', async () => {
    const response = await request(harness.app)
      .post('/api/v1/apps')
      .set('Content-Type', 'application/json')
      .send(JSON.stringify({ pad: 'x'.repeat(1_100_000) }));
    expect(response.status).toBe(413);
    expect(response.body).toMatchObject({ code: 'payload_too_large' });
  });

  it('GET /health answers 503 when the database is gone', async () => {
    const own = await createMigratedScratchDatabase('control plane down');
    const app = createApp({
      dataSource: own.dataSource,
      logger: createLogger({ service: 'test', stream: new PassThrough() }),
      credentialKeys: TEST_CREDENTIAL_KEYS,
      internalTokens: TEST_INTERNAL_TOKENS,
    });
    await own.drop();
    const response = await request(app).get('/health');
    expect(response.status).toBe(503);
    expect(response.body).toEqual({ ok: false, database: 'down' });
  });
});
