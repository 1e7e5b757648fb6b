import { createServer, request as httpRequest, Agent, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import { createLogger } from '@pipeline/logger';
import { drainHttpServer, Shutdown } from './index';

const logger = createLogger({ service: 'test', stream: new PassThrough() });

describe('Shutdown', () => {
  it('runs hooks last-registered first, once, and exits 0', async () => {
    const order: string[] = [];
    const exit = jest.fn();
    const shutdown = new Shutdown({ logger, timeoutMs: 1000, exit })
      .add('pools', () => void order.push('pools'))
      .add('producer', async () => {
        await new Promise((resolve) => setTimeout(resolve, 10));
        order.push('producer');
      })
      .add('http', () => void order.push('http'));
    await Promise.all([shutdown.run('SIGTERM'), shutdown.run('SIGINT')]);
    expect(order).toEqual(['http', 'producer', 'pools']);
    expect(exit).toHaveBeenCalledTimes(1);
    expect(exit).toHaveBeenCalledWith(0);
  });

  it("runs a composition root's steps after what was added later, the last step first", async () => {
    const order: string[] = [];
    const exit = jest.fn();
    await new Shutdown({ logger, timeoutMs: 1000, exit })
      .add('tracing', () => void order.push('tracing'))
      .addSteps([
        { name: 'pools', run: () => void order.push('pools') },
        { name: 'worker', run: () => void order.push('worker') },
      ])
      .add('http', () => void order.push('http'))
      .run('SIGTERM');
    expect(order).toEqual(['http', 'worker', 'pools', 'tracing']);
    expect(exit).toHaveBeenCalledWith(0);
  });

  it('keeps going after a failing hook and exits 1', async () => {
    const order: string[] = [];
    const exit = jest.fn();
    await new Shutdown({ logger, timeoutMs: 1000, exit })
      .add('pools', () => void order.push('pools'))
      .add('producer', () => {
        throw new Error('broker gone');
      })
      .run('SIGTERM');
    expect(order).toEqual(['pools']);
    expect(exit).toHaveBeenCalledWith(1);
  });

  it('treats signals within two seconds as one request and a later one as force', async () => {
    const exit = jest.fn();
    let release: () => void = () => undefined;
    const shutdown = new Shutdown({ logger, timeoutMs: 10_000, exit }).add(
      'slow',
      () => new Promise<void>((resolve) => (release = resolve)),
    );
    shutdown.onSignal('SIGINT', 1_000);
    shutdown.onSignal('SIGINT', 1_500); // the same Ctrl-C, forwarded by a supervisor
    expect(exit).not.toHaveBeenCalled();
    shutdown.onSignal('SIGINT', 4_000); // pressed again: force
    expect(exit).toHaveBeenCalledWith(1);
    release();
  });

  it('exits with the code of a shutdown caused by a failure', async () => {
    const exit = jest.fn();
    await new Shutdown({ logger, timeoutMs: 1000, exit })
      .add('consumer', () => undefined)
      .run('consumer crashed', 1);
    expect(exit).toHaveBeenCalledWith(1);
  });

  it('exits 1 when the hooks overrun the bound', async () => {
    const exit = jest.fn();
    // The hook never settles, so `run` resolving at all is the bound at work.
    await new Shutdown({ logger, timeoutMs: 100, exit })
      .add('stuck', () => new Promise(() => undefined))
      .run('SIGTERM');
    expect(exit).toHaveBeenCalledTimes(1);
    expect(exit).toHaveBeenCalledWith(1);
  });
});

describe('drainHttpServer', () => {
  let server: Server;
  let port: number;
  let release: () => void;
  // Resolves once the server holds a /slow request: tests wait for that, not for a pause.
  let slowArrived: Promise<void>;

  beforeEach(async () => {
    const gate = new Promise<void>((resolve) => (release = resolve));
    let arrived: () => void = () => undefined;
    slowArrived = new Promise<void>((resolve) => (arrived = resolve));
    server = createServer((req, res) => {
      if (req.url === '/slow') {
        arrived();
        void gate.then(() => res.end('slow done'));
      } else res.end('fast');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });

  afterEach(() => server.closeAllConnections());

  function get(path: string, agent?: Agent): Promise<{ status: number; body: string; connection?: string }> {
    return new Promise((resolve, reject) => {
      const req = httpRequest({ host: '127.0.0.1', port, path, agent }, (res) => {
        let body = '';
        res.on('data', (chunk: Buffer) => (body += chunk.toString()));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, body, connection: res.headers.connection }),
        );
      });
      req.on('error', reject);
      req.end();
    });
  }

  it('finishes an in-flight request, closes idle keep-alive connections, and refuses new ones', async () => {
    const agent = new Agent({ keepAlive: true });
    expect((await get('/fast', agent)).body).toBe('fast'); // leaves an idle keep-alive socket
    const inFlight = get('/slow');
    await slowArrived;

    let drained = false;
    const draining = drainHttpServer(server, 5000).then(() => (drained = true));
    // A refused connection proves the listener is closed; the drain cannot have finished,
    // because /slow is held until release().
    await expect(get('/fast')).rejects.toThrow(/ECONNREFUSED/);
    expect(drained).toBe(false);

    release();
    const slow = await inFlight;
    expect(slow).toMatchObject({ status: 200, body: 'slow done' });
    // Resolves although the keep-alive agent still holds its idle socket: that one was closed.
    await draining;
    expect(drained).toBe(true);
    agent.destroy();
  });

  it('cuts connections still open after the grace period', async () => {
    const inFlight = get('/slow').catch((error: Error) => error);
    await slowArrived;
    // /slow is never released, so the drain resolving at all is the grace period cutting it.
    await drainHttpServer(server, 200);
    // The cut connection surfaces as a socket error on the client (jest's realm makes instanceof unreliable).
    expect(String(await inFlight)).toMatch(/socket hang up|ECONNRESET/);
  });
});
