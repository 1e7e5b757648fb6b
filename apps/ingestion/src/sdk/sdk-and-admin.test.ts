import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import request from 'supertest';
import { createLogger } from '@pipeline/logger';
import { collect, event, startHosted, type Hosted } from '../testing/ingestion-harness';
import { createApp } from '../app';
import { StaticHealth } from '../health/delivery-health';
import { loadSdkFile } from './sdk-file';
import { renderSnippet, scriptLiteral } from './snippet';

const logger = createLogger({ service: 'test', stream: new PassThrough() });

describe('GET /v1/sdk.js and /v1/snippet', () => {
  let h: Hosted;
  beforeAll(async () => {
    h = await startHosted('sdk');
  });
  afterAll(() => h.close());

  const appWithSdk = (sdkPath: string) => {
    const sdk = loadSdkFile(sdkPath, logger);
    return createApp({
      logger,
      collect: h.collectService,
      health: new StaticHealth(),
      sdk,
      simulate: { demoMode: false, adminSetupEnabled: false, adminToken: undefined },
      clientAddress: () => null,
    });
  };

  it('serves the SDK file loaded at start as JavaScript with a one-hour cache and an ETag (304 on match)', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'sdk-'));
    writeFileSync(path.join(dir, 'sdk.js'), 'window.analytics=window.analytics||[];');
    const app = appWithSdk(path.join(dir, 'sdk.js'));
    const response = await request(app).get('/v1/sdk.js');
    expect(response.status).toBe(200);
    expect(response.headers['content-type']).toBe('application/javascript; charset=utf-8');
    // An hour at browsers (the spec's 1-hour cache header); CDNs longer, revalidating by ETag.
    expect(response.headers['cache-control']).toBe(
      'public, max-age=3600, s-maxage=86400, stale-while-revalidate=604800',
    );
    expect(response.text).toBe('window.analytics=window.analytics||[];');
    const again = await request(app).get('/v1/sdk.js').set('If-None-Match', response.headers.etag!);
    expect(again.status).toBe(304);
  });

  it('answers 404 sdk_not_found when no SDK was built', async () => {
    const response = await request(appWithSdk('/nonexistent/sdk.js')).get('/v1/sdk.js');
    expect(response.status).toBe(404);
    expect(response.body).toEqual({ ok: false, error: 'sdk_not_found' });
  });

  it('renders a snippet with the literal placeholder and the host seen through the proxy', async () => {
    const response = await request(h.app)
      .get('/v1/snippet')
      .set('X-Forwarded-Proto', 'https')
      .set('X-Forwarded-Host', 't.example.com');
    expect(response.status).toBe(200);
    // Text to paste, never a page that runs on the tracking origin.
    expect(response.headers['content-type']).toBe('text/plain; charset=utf-8');
    expect(response.headers['x-content-type-options']).toBe('nosniff');
    expect(response.headers['content-security-policy']).toBe("sandbox; default-src 'none'");
    expect(response.text).toContain('a.writeKey="YOUR_WRITE_KEY"');
    expect(response.text).toContain('a.host="https://t.example.com"');
    expect(response.text).toContain('/v1/sdk.js');
    const explicit = await request(h.app).get('/v1/snippet?writeKey=wk_abc&host=http://localhost:3001/');
    expect(explicit.text).toContain('a.writeKey="wk_abc"');
    expect(explicit.text).toContain('a.host="http://localhost:3001"');
  });

  it('escapes every inserted value: no query can inject markup or script', async () => {
    const attack = '"</script><script>alert(1)</script><!--\u2028';
    const response = await request(h.app).get('/v1/snippet').query({ writeKey: attack });
    expect(response.text.match(/<\/script>/g)).toHaveLength(1);
    expect(response.text).not.toContain('<script>alert');
    expect(response.text).not.toContain('\u2028');
    expect(scriptLiteral(attack)).toBe(
      '"\\"\\u003c/script\\u003e\\u003cscript\\u003ealert(1)\\u003c/script\\u003e\\u003c!--\\u2028"',
    );
    const badHost = await request(h.app).get('/v1/snippet').query({ host: 'javascript:alert(1)' });
    expect(badHost.status).toBe(400);
    expect(badHost.body).toMatchObject({ ok: false, error: 'invalid_host' });
    expect(renderSnippet('k', 'https://h').startsWith('<script>')).toBe(true);
  });
});

describe('POST /admin/simulate', () => {
  const token = 'admin-token-0123456789';
  let h: Hosted;
  beforeAll(async () => {
    h = await startHosted('simulate', {
      simulate: { demoMode: true, adminSetupEnabled: true, adminToken: token },
    });
  });
  afterAll(() => h.close());

  it('is absent (404) unless DEMO_MODE and ADMIN_SETUP_ENABLED are both on', async () => {
    const off = await startHosted('simulate off', {
      simulate: { demoMode: true, adminSetupEnabled: false, adminToken: token },
    });
    const response = await request(off.app).post('/admin/simulate').set('X-Admin-Token', token).send(event());
    expect(response.status).toBe(404);
    await off.close();
  });

  it('refuses a missing or wrong X-Admin-Token with 403', async () => {
    expect((await request(h.app).post('/admin/simulate').send(event())).body).toEqual({
      ok: false,
      error: 'invalid_admin_token',
    });
    expect(
      (await request(h.app).post('/admin/simulate').set('X-Admin-Token', `${token}x`).send(event())).status,
    ).toBe(403);
  });

  it('previews rows, destinations after consent filtering, warnings and the merchant, and writes nothing', async () => {
    const before = (await h.readTopic()).length;
    const granted = event({ context: { consent: { analytics: true } } });
    const denied = event({ type: 'page', context: { consent: { analytics: false } } });
    const response = await request(h.app)
      .post('/admin/simulate')
      .set('X-Admin-Token', token)
      .set('X-Write-Key', h.openWriteKey)
      .send({ batch: [granted, denied, { type: 'track' }] });
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({
      simulated: true,
      received: 3,
      invalid: 1,
      merchant: { accountId: h.accountId },
    });
    expect(response.body.rows.map((r: { table: string }) => r.table)).toEqual(['events', 'events']);
    expect(response.body.rows[0].row).toMatchObject({
      message_id: granted.messageId,
      context_consent: { analytics: true },
    });
    const amplitude = response.body.destinations.find(
      (d: { kind: string }) => d.kind === 'product_analytics',
    );
    expect(amplitude).toMatchObject({
      appType: 'amplitude',
      events: [{ messageId: granted.messageId, type: 'track' }],
      filteredByConsent: [denied.messageId],
    });
    expect(
      response.body.destinations.find((d: { kind: string }) => d.kind === 'warehouse').events,
    ).toHaveLength(2);
    expect(response.body.warnings).toEqual(
      expect.arrayContaining([expect.stringMatching(/nothing was published/)]),
    );
    expect(JSON.stringify(response.body)).not.toContain('"amp"'); // no credentials in the preview
    expect((await h.readTopic()).length).toBe(before);
  });

  it('reports what /collect would refuse, without failing', async () => {
    const response = await request(h.app)
      .post('/admin/simulate')
      .set('X-Admin-Token', token)
      .set('X-Write-Key', 'wk_unknown')
      .send(event());
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({
      simulated: true,
      merchant: null,
      rows: [],
      error: { error: 'invalid_write_key' },
    });
  });
});

describe('context_ip', () => {
  let trusted: Hosted;
  beforeAll(async () => {
    // A load balancer in 10.0.0.0/8 behind a loopback sidecar: both trusted, both append.
    trusted = await startHosted('client ip', { trustedProxies: ['loopback', '10.0.0.0/8'] });
  });
  afterAll(() => trusted.close());

  it('takes the rightmost X-Forwarded-For hop that is not a trusted proxy', async () => {
    const e = event();
    await collect(trusted.app)
      .set('X-Write-Key', trusted.openWriteKey)
      .set('X-Forwarded-For', '203.0.113.7, 10.0.0.1')
      .send(e);
    // The client sent "X-Forwarded-For: 198.51.100.1, 8.8.8.8"; the proxies appended its real
    // address and their own: the forged hops on the left are not believed.
    const spoofed = event();
    await collect(trusted.app)
      .set('X-Write-Key', trusted.openWriteKey)
      .set('X-Forwarded-For', '198.51.100.1, 8.8.8.8, 203.0.113.9, 10.1.2.3')
      .send(spoofed);
    const junk = event();
    await collect(trusted.app)
      .set('X-Write-Key', trusted.openWriteKey)
      .set('X-Forwarded-For', 'not-an-ip')
      .send(junk);
    const junkLeft = event();
    await collect(trusted.app)
      .set('X-Write-Key', trusted.openWriteKey)
      .set('X-Forwarded-For', 'not-an-ip, 10.0.0.7')
      .send(junkLeft);
    const envelopes = await trusted.readTopic(4);
    const ipOf = (messageId: string) => envelopes.find((x) => x.event.messageId === messageId)?.ip;
    expect(ipOf(e.messageId)).toBe('203.0.113.7');
    expect(ipOf(spoofed.messageId)).toBe('203.0.113.9');
    expect(ipOf(junk.messageId)).toBe('127.0.0.1');
    expect(ipOf(junkLeft.messageId)).toBe('10.0.0.7');
  });
});

describe('context_ip without trusted proxies', () => {
  let h: Hosted;
  beforeAll(async () => {
    h = await startHosted('client ip untrusted');
  });
  afterAll(() => h.close());

  it('ignores X-Forwarded-For from an untrusted peer', async () => {
    const e = event();
    await collect(h.app).set('X-Write-Key', h.openWriteKey).set('X-Forwarded-For', '203.0.113.7').send(e);
    expect((await h.readTopic(1)).find((x) => x.event.messageId === e.messageId)?.ip).toBe('127.0.0.1');
  });
});
