import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import { createLogger } from '@pipeline/logger';
import {
  ControlPlaneClient,
  ControlPlaneUnavailable,
  TrackingPlanVersionNotFound,
  WarehouseQuestionRefused,
} from './control-plane-client';

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

describe('ControlPlaneClient warehouse questions', () => {
  let server: Server;
  let answer: { status: number; body: unknown } = { status: 200, body: {} };
  const requests: { url: string; body: string; authorization: string | undefined }[] = [];
  let client: ControlPlaneClient;
  const logs: string[] = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
      req.on('end', () => {
        requests.push({ url: req.url ?? '', body, authorization: req.headers.authorization });
        res.writeHead(answer.status, { 'content-type': 'application/json' });
        res.end(answer.status === 204 ? undefined : JSON.stringify(answer.body));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const stream = new PassThrough();
    stream.on('data', (chunk: Buffer) => logs.push(chunk.toString('utf8')));
    client = new ControlPlaneClient(
      `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      'warehouse-token',
      createLogger({ service: 'test', stream }),
    );
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const resolved = {
    placement: { warehouseId: 'w1', engine: 'postgres', schema: 'account_a', epoch: 2 },
    connection: {
      warehouseId: 'w1',
      engine: 'postgres',
      host: 'h',
      port: 5432,
      database: 'd',
      user: 'u',
      password: 'p',
      tlsMode: 'require',
      owner: 'platform',
      maxConnections: 3,
    },
  };

  it('asks for the account with its own token and returns the answer', async () => {
    answer = { status: 200, body: { data: resolved } };
    await expect(client.resolveWarehouse('acc-1')).resolves.toEqual(resolved);
    expect(requests.at(-1)).toEqual({
      url: '/internal/v1/warehouses/resolve',
      body: JSON.stringify({ accountId: 'acc-1' }),
      authorization: 'Bearer warehouse-token',
    });
  });

  it('reads a 4xx as a refusal with its code, anything else as unavailable', async () => {
    answer = { status: 404, body: { code: 'account_not_found' } };
    await expect(client.resolveWarehouse('acc-1')).rejects.toEqual(
      new WarehouseQuestionRefused(404, 'account_not_found'),
    );
    answer = { status: 400, body: 'not json object' };
    await expect(client.resolveWarehouse('acc-1')).rejects.toMatchObject({ status: 400, code: 'unknown' });
    for (const status of [500, 503]) {
      answer = { status, body: { code: 'x' } };
      await expect(client.resolveWarehouse('acc-1')).rejects.toBeInstanceOf(ControlPlaneUnavailable);
    }
    answer = { status: 401, body: { code: 'invalid_service_token' } };
    await expect(client.resolveWarehouse('acc-1')).rejects.toBeInstanceOf(ControlPlaneUnavailable);
    expect(logs.join('')).toContain('the control plane refused INTERNAL_SERVICE_TOKEN');
  });

  it('reads an answer without a warehouse as unavailable', async () => {
    for (const body of [{}, { data: null }, { data: { placement: resolved.placement } }]) {
      answer = { status: 200, body };
      await expect(client.resolveWarehouse('acc-1')).rejects.toBeInstanceOf(ControlPlaneUnavailable);
    }
  });

  it('reports a status to the warehouse named, detail only when given', async () => {
    answer = { status: 204, body: undefined };
    await client.reportWarehouseStatus('w/1', 'unavailable', 'refused');
    expect(requests.at(-1)).toMatchObject({
      url: '/internal/v1/warehouses/w%2F1/status',
      body: JSON.stringify({ status: 'unavailable', detail: 'refused' }),
    });
    await client.reportWarehouseStatus('w1', 'active');
    expect(requests.at(-1)?.body).toBe(JSON.stringify({ status: 'active' }));
    answer = { status: 404, body: { code: 'warehouse_not_found' } };
    await expect(client.reportWarehouseStatus('w1', 'active')).rejects.toMatchObject({
      status: 404,
      code: 'warehouse_not_found',
    });
  });
});

describe('ControlPlaneClient.trackingPlanVersion', () => {
  let server: Server;
  let answer: { status: number; body: unknown; hang?: boolean } = { status: 200, body: {} };
  const requests: { url: string; body: string; authorization: string | undefined }[] = [];
  let client: ControlPlaneClient;
  const logs: string[] = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
      req.on('end', () => {
        requests.push({ url: req.url ?? '', body, authorization: req.headers.authorization });
        if (answer.hang) return;
        res.writeHead(answer.status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(answer.body));
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const stream = new PassThrough();
    stream.on('data', (chunk: Buffer) => logs.push(chunk.toString('utf8')));
    client = new ControlPlaneClient(
      `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      'ingestion-token',
      createLogger({ service: 'test', stream }),
      300,
    );
  });
  afterAll(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );

  const version = {
    planId: 'p-1',
    version: 2,
    hash: 'a'.repeat(64),
    plan: { rules: [{ type: 'track', name: 'Order Completed', schema: { required: ['properties'] } }] },
  };

  it('asks for the account, plan and version with its token and returns the version', async () => {
    answer = { status: 200, body: { data: version } };
    await expect(client.trackingPlanVersion('acc-1', 'p-1', 2)).resolves.toEqual(version);
    expect(requests.at(-1)).toEqual({
      url: '/internal/v1/tracking-plan-versions',
      body: JSON.stringify({ accountId: 'acc-1', planId: 'p-1', version: 2 }),
      authorization: 'Bearer ingestion-token',
    });
  });

  it('reads a 404 as no such version, distinct from unavailable', async () => {
    answer = { status: 404, body: { code: 'tracking_plan_version_not_found' } };
    const refusal = await client.trackingPlanVersion('acc-1', 'p-1', 9).catch((e: unknown) => e);
    expect(refusal).toBeInstanceOf(TrackingPlanVersionNotFound);
    expect(refusal).not.toBeInstanceOf(ControlPlaneUnavailable);
    expect(refusal).toMatchObject({ planId: 'p-1', version: 9 });
  });

  it.each([400, 409, 422, 500, 503])('reads %i as unavailable', async (status) => {
    answer = { status, body: { code: 'x' } };
    await expect(client.trackingPlanVersion('acc-1', 'p-1', 2)).rejects.toBeInstanceOf(
      ControlPlaneUnavailable,
    );
  });

  it('reads its own token refused as unavailable, and says so in the logs', async () => {
    answer = { status: 403, body: { code: 'insufficient_scope' } };
    await expect(client.trackingPlanVersion('acc-1', 'p-1', 2)).rejects.toBeInstanceOf(
      ControlPlaneUnavailable,
    );
    expect(logs.join('')).toContain('the control plane refused INTERNAL_SERVICE_TOKEN');
  });

  it('reads an answer for another version, or without a plan, as unavailable', async () => {
    for (const data of [
      null,
      { ...version, version: 3 },
      { ...version, planId: 'p-2' },
      { ...version, hash: undefined },
      { ...version, plan: null },
      { ...version, plan: { rules: {} } },
    ]) {
      answer = { status: 200, body: { data } };
      await expect(client.trackingPlanVersion('acc-1', 'p-1', 2)).rejects.toBeInstanceOf(
        ControlPlaneUnavailable,
      );
    }
  });

  it('reads a timeout as unavailable', async () => {
    answer = { status: 200, body: {}, hang: true };
    await expect(client.trackingPlanVersion('acc-1', 'p-1', 2)).rejects.toBeInstanceOf(
      ControlPlaneUnavailable,
    );
  });
});
