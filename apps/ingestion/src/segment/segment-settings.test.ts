import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { WarehouseWriter } from '@pipeline/destinations';
import { loadConfig } from '@pipeline/config';
import { ingestionConfigSchema } from '../config';
import { staticApp } from '../testing/ingestion-harness';

const WRITE_KEY = 'wk_settings_test_key';

// The settings document analytics-next loads is cached by CDNs
// (Cache-Control: public, max-age=60, no Vary). Its apiHost used to come from X-Forwarded-Host,
// so one request through a CDN that passes the header pointed every page of the key at another
// host. It now comes from PUBLIC_TRACKING_URL, or where the request arrived; never a header.
describe('GET /v1/projects/{writeKey}/settings takes its host from configuration, not headers', () => {
  // Never connected: the settings route writes nothing.
  const writer = new WarehouseWriter('postgres://postgres@127.0.0.1:1/unused');
  const servers: Server[] = [];
  afterAll(async () => {
    for (const server of servers) {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
    await writer.close();
  });

  async function listening(publicTrackingUrl?: string): Promise<string> {
    const server = createServer(
      staticApp(writer, { writeKey: WRITE_KEY, ...(publicTrackingUrl ? { publicTrackingUrl } : {}) }),
    );
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  const poisoned = (base: string) =>
    request(base)
      .get(`/v1/projects/${WRITE_KEY}/settings`)
      .set('X-Forwarded-Host', 'evil.example')
      .set('X-Forwarded-Proto', 'http');

  it('names PUBLIC_TRACKING_URL whatever X-Forwarded-Host says', async () => {
    const response = await poisoned(await listening('https://track.example.com'));
    expect(response.status).toBe(200);
    expect(response.headers['cache-control']).toBe('public, max-age=60');
    expect(response.body.integrations['Segment.io']).toMatchObject({
      apiKey: WRITE_KEY,
      apiHost: 'track.example.com/v1',
      protocol: 'https',
    });
    expect(response.text).not.toContain('evil.example');
  });

  it('without PUBLIC_TRACKING_URL names the address the request arrived at, not Host or X-Forwarded-Host', async () => {
    const base = await listening();
    const response = await poisoned(base).set('Host', 'evil.example');
    expect(response.status).toBe(200);
    expect(response.body.integrations['Segment.io']).toMatchObject({
      apiHost: `${new URL(base).host}/v1`,
      protocol: 'http',
    });
    expect(response.text).not.toContain('evil.example');
  });

  it('accepts an origin as PUBLIC_TRACKING_URL and refuses a path or another scheme', () => {
    const env = { WRITE_KEY };
    expect(
      loadConfig(ingestionConfigSchema, { ...env, PUBLIC_TRACKING_URL: 'https://track.example.com' })
        .PUBLIC_TRACKING_URL,
    ).toBe('https://track.example.com');
    for (const bad of ['https://track.example.com/v1', 'ftp://track.example.com', 'track.example.com'])
      expect(() => loadConfig(ingestionConfigSchema, { ...env, PUBLIC_TRACKING_URL: bad })).toThrow(
        /PUBLIC_TRACKING_URL/,
      );
  });
});
