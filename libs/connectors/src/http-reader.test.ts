import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createGuardedFetch } from '@pipeline/egress';
import { ConnectorError } from './connector';
import { getJson } from './http-reader';

describe('getJson', () => {
  let server: Server;
  let url: URL;
  let requests = 0;
  let answer: { status: number; body: string } = { status: 200, body: '{}' };

  beforeAll(async () => {
    server = createServer((_req, res) => {
      requests += 1;
      res.writeHead(answer.status, { 'content-type': 'application/json' });
      res.end(answer.body);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/admin/api/shop.json`);
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));
  beforeEach(() => {
    requests = 0;
  });

  it('refuses an internal address once, permanently, without naming it to the tenant', async () => {
    const error = await getJson(
      'shopify',
      url,
      {},
      { fetch: createGuardedFetch(), attempts: 3, minDelayMs: 1 },
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConnectorError);
    expect(error).toMatchObject({
      code: 'address_refused',
      message: 'shopify: the host is not a public address',
      retryable: false,
    });
    expect((error as ConnectorError).detail).toBe(
      'EGRESS_REFUSED: refused to connect to 127.0.0.1 (loopback)',
    );
    expect(requests).toBe(0);
  });

  it('keeps the vendor’s body out of the message a tenant sees', async () => {
    answer = { status: 400, body: '{"errors":"internal hostname db-7.corp leaked"}' };
    const error = (await getJson('shopify', url, {}, { attempts: 1 }).catch(
      (e: unknown) => e,
    )) as ConnectorError;
    expect(error).toMatchObject({ code: 'request_rejected', message: 'shopify answered 400', status: 400 });
    expect(error.detail).toBe(answer.body);
  });

  it('does the same for a status retried until the attempts run out', async () => {
    answer = { status: 503, body: 'upstream 10.0.0.5:9200 down' };
    const error = (await getJson('shopify', url, {}, { attempts: 2, minDelayMs: 1 }).catch(
      (e: unknown) => e,
    )) as ConnectorError;
    expect(error).toMatchObject({
      code: 'vendor_unavailable',
      message: 'shopify answered 503',
      retryable: true,
    });
    expect(error.detail).toBe(answer.body);
    expect(requests).toBe(2);
  });
});
