import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import { createLogger } from '@pipeline/logger';
import { ControlPlaneClient, ControlPlaneUnavailable } from './control-plane-client';

describe('ControlPlaneClient.resolve', () => {
  let server: Server;
  let status = 200;
  let client: ControlPlaneClient;
  const logs: string[] = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      req.resume();
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(status === 200 ? { data: { accountId: 'a' } } : { code: 'x' }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const stream = new PassThrough();
    stream.on('data', (chunk: Buffer) => logs.push(chunk.toString('utf8')));
    client = new ControlPlaneClient(
      `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      'token',
      createLogger({ service: 'test', stream }),
    );
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it.each([400, 404, 413, 422])('reads %i about the key as an unknown key', async (answer) => {
    status = answer;
    await expect(client.resolve('wk_x')).resolves.toBeNull();
  });

  it.each([500, 502, 503])('reads %i as unavailable', async (answer) => {
    status = answer;
    await expect(client.resolve('wk_x')).rejects.toBeInstanceOf(ControlPlaneUnavailable);
  });

  it('reads its own token refused as unavailable, and says so in the logs', async () => {
    status = 401;
    await expect(client.resolve('wk_x')).rejects.toBeInstanceOf(ControlPlaneUnavailable);
    expect(logs.join('')).toContain('the control plane refused INTERNAL_SERVICE_TOKEN');
  });

  it('returns the record of a known key', async () => {
    status = 200;
    await expect(client.resolve('wk_x')).resolves.toEqual({ accountId: 'a' });
  });
});
