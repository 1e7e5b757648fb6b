import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import request from 'supertest';
import { createLogger } from '@pipeline/logger';
import { serveHttp, Shutdown, startService } from './index';

const logger = createLogger({ service: 'test', stream: new PassThrough() });

describe('serveHttp', () => {
  it('serves, and closes the server as a shutdown step before the earlier-registered ones', async () => {
    const order: string[] = [];
    const exit = jest.fn();
    const shutdown = new Shutdown({ logger, timeoutMs: 2000, exit }).add(
      'pools',
      () => void order.push('pools'),
    );
    const server = await serveHttp((_req, res) => res.end('hello'), {
      host: '127.0.0.1',
      port: 0,
      logger,
      shutdown,
    });
    server.on('close', () => order.push('http closed'));
    const { port } = server.address() as AddressInfo;
    expect((await request(`http://127.0.0.1:${port}`).get('/')).text).toBe('hello');

    await shutdown.run('SIGTERM');
    expect(server.listening).toBe(false);
    expect(order).toEqual(['http closed', 'pools']);
    expect(exit).toHaveBeenCalledWith(0);
  });

  it('rejects when the port is taken, instead of crashing later', async () => {
    const shutdown = new Shutdown({ logger, timeoutMs: 2000, exit: jest.fn() });
    const first = await serveHttp((_req, res) => res.end(), { host: '127.0.0.1', port: 0, logger, shutdown });
    const { port } = first.address() as AddressInfo;
    await expect(
      serveHttp((_req, res) => res.end(), { host: '127.0.0.1', port, logger, shutdown }),
    ).rejects.toThrow(/EADDRINUSE/);
    first.close();
  });
});

describe('startService', () => {
  it('turns a start-up failure into one line on stderr and exit code 1', async () => {
    const exit = jest.spyOn(process, 'exit').mockImplementation((() => undefined) as never);
    const stderr = jest.spyOn(process.stderr, 'write').mockImplementation(() => true);
    try {
      startService('ingestion', async () => {
        throw new Error('connect ECONNREFUSED 127.0.0.1:9092');
      });
      await new Promise((resolve) => setImmediate(resolve));
      expect(stderr).toHaveBeenCalledWith(
        'ingestion: failed to start: connect ECONNREFUSED 127.0.0.1:9092\n',
      );
      expect(exit).toHaveBeenCalledWith(1);
    } finally {
      exit.mockRestore();
      stderr.mockRestore();
    }
  });
});
