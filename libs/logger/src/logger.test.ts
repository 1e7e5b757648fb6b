import { PassThrough } from 'node:stream';
import { createServer, type Server } from 'node:http';
import request from 'supertest';
import { createLogger, requestLogging, runWithRequestId } from './index';

function capture() {
  const stream = new PassThrough();
  const lines: Record<string, unknown>[] = [];
  stream.on('data', (chunk: Buffer) => {
    for (const line of chunk.toString('utf8').split('\n').filter(Boolean)) lines.push(JSON.parse(line));
  });
  return { stream, lines };
}

const flush = () => new Promise((resolve) => setImmediate(resolve));

describe('createLogger', () => {
  it('writes one JSON object per line with timestamp, level, service and message', async () => {
    const { stream, lines } = capture();
    const logger = createLogger({ service: 'svc', stream });
    logger.info('hello', { count: 2 });
    await flush();
    expect(lines).toEqual([
      expect.objectContaining({
        level: 'info',
        message: 'hello',
        service: 'svc',
        count: 2,
        timestamp: expect.any(String),
      }),
    ]);
  });

  it('adds the request id of the surrounding context, across awaits', async () => {
    const { stream, lines } = capture();
    const logger = createLogger({ service: 'svc', stream });
    await runWithRequestId('req-1', async () => {
      await new Promise((resolve) => setTimeout(resolve, 5));
      logger.warn('inside');
    });
    logger.info('outside');
    await flush();
    expect(lines[0]).toMatchObject({ message: 'inside', requestId: 'req-1' });
    expect(lines[1]).not.toHaveProperty('requestId');
  });

  it('redacts secrets wherever they appear in the metadata', async () => {
    const { stream, lines } = capture();
    const logger = createLogger({ service: 'svc', stream });
    logger.info('call', {
      headers: { authorization: 'Bearer sk_live_123', 'x-write-key': 'wk_abc' },
      app: { credentials: { apiKey: 'k' }, name: 'Stripe' },
      writeKey: 'wk_def',
    });
    await flush();
    const text = JSON.stringify(lines[0]);
    for (const secret of ['sk_live_123', 'wk_abc', 'wk_def', '"k"']) expect(text).not.toContain(secret);
    expect(lines[0]).toMatchObject({
      app: { name: 'Stripe', credentials: '[redacted]' },
      writeKey: '[redacted]',
    });
  });

  it('respects the level', async () => {
    const { stream, lines } = capture();
    const logger = createLogger({ service: 'svc', stream, level: 'warn' });
    logger.info('dropped');
    logger.error('kept');
    await flush();
    expect(lines.map((l) => l.message)).toEqual(['kept']);
  });
});

describe('requestLogging', () => {
  let server: Server;
  let lines: Record<string, unknown>[];

  beforeEach(() => {
    const captured = capture();
    lines = captured.lines;
    const logger = createLogger({ service: 'svc', stream: captured.stream });
    const middleware = requestLogging(logger);
    server = createServer((req, res) =>
      middleware(req, res, () => {
        logger.info('handling');
        res.end('ok');
      }),
    );
  });

  it('uses an acceptable caller id, echoes it, and puts it on every line of the request', async () => {
    const response = await request(server).get('/collect?writeKey=secret').set('X-Request-Id', 'abc-123');
    await flush();
    expect(response.headers['x-request-id']).toBe('abc-123');
    expect(lines).toEqual([
      expect.objectContaining({ message: 'handling', requestId: 'abc-123' }),
      expect.objectContaining({
        message: 'request completed',
        requestId: 'abc-123',
        path: '/collect',
        status: 200,
        method: 'GET',
      }),
    ]);
    expect(JSON.stringify(lines)).not.toContain('secret');
  });

  it('replaces an unacceptable caller id with a UUID', async () => {
    const response = await request(server).get('/').set('X-Request-Id', 'bad id {"level":"error"}');
    await flush();
    expect(response.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    expect(lines[0]?.requestId).toBe(response.headers['x-request-id']);
  });
});

describe('requestLogging with successLevel debug', () => {
  const serve = (level: 'info' | 'debug') => {
    const captured = capture();
    const logger = createLogger({ service: 'svc', stream: captured.stream, level });
    const middleware = requestLogging(logger, { successLevel: 'debug' });
    const server = createServer((req, res) =>
      middleware(req, res, () => {
        res.statusCode = req.url === '/fail' ? 503 : req.url === '/bad' ? 400 : 202;
        res.end();
      }),
    );
    return { server, lines: captured.lines };
  };

  it('logs 4xx and 5xx at info and leaves 2xx out at level info', async () => {
    const { server, lines } = serve('info');
    await request(server).get('/ok').set('X-Request-Id', 'r-ok');
    await request(server).get('/bad').set('X-Request-Id', 'r-bad');
    await request(server).get('/fail').set('X-Request-Id', 'r-fail');
    await flush();
    expect(lines.map((l) => [l.level, l.status, l.requestId])).toEqual([
      ['info', 400, 'r-bad'],
      ['info', 503, 'r-fail'],
    ]);
  });

  it('logs 2xx at debug when the level is debug', async () => {
    const { server, lines } = serve('debug');
    await request(server).get('/ok').set('X-Request-Id', 'r-ok');
    await flush();
    expect(lines).toEqual([
      expect.objectContaining({
        level: 'debug',
        status: 202,
        requestId: 'r-ok',
        message: 'request completed',
      }),
    ]);
  });
});
