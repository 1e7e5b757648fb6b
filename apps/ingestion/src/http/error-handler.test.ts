import { IncomingMessage, ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import { PassThrough } from 'node:stream';
import { AppError } from '@pipeline/errors';
import { createLogger } from '@pipeline/logger';
import { waitUntil } from '@pipeline/control-plane/testing/wait';
import { ingestionErrors } from '../collect/ingestion-errors';
import { ingestionErrorBody, writeError, writeJson, type ErrorBody } from './error-handler';

// What a client receives for an error: the status, the body and Retry-After, which SDKs wait
// for before they retry. The response is never sent: its end() is where the body is read.

class RecordedResponse extends ServerResponse {
  body = '';
  constructor() {
    super(new IncomingMessage(new Socket()));
  }
  override end(chunk?: unknown): this {
    this.body = String(chunk);
    return this;
  }
}

function recordingLogger() {
  const lines: string[] = [];
  const stream = new PassThrough();
  stream.on('data', (chunk: Buffer) => lines.push(chunk.toString()));
  return { logger: createLogger({ service: 'error-test', stream }), lines };
}

function answer(error: unknown, body?: ErrorBody) {
  const res = new RecordedResponse();
  const { logger, lines } = recordingLogger();
  writeError(res, error, logger, body);
  return { res, lines, headers: res.getHeaders(), json: JSON.parse(res.body) as unknown };
}

describe('writeJson', () => {
  it('sends the body as JSON with its status, type and length in bytes', () => {
    const res = new RecordedResponse();
    writeJson(res, 201, { name: 'café' });
    expect(res.statusCode).toBe(201);
    expect(res.body).toBe('{"name":"café"}');
    expect(res.getHeaders()).toEqual({
      'content-type': 'application/json; charset=utf-8',
      'content-length': 16,
    });
  });
});

describe('writeError', () => {
  it('answers a documented error with its status, code and details, and Retry-After when it has one', () => {
    const { res, headers, json } = answer(ingestionErrors.rateLimited('second', 1));
    expect(res.statusCode).toBe(429);
    expect(json).toEqual({ ok: false, error: 'rate_limit_exceeded', limitType: 'second', retryAfter: 1 });
    expect(headers['retry-after']).toBe('1');
  });

  it('sends no Retry-After for an error without one', () => {
    const { res, headers, json } = answer(ingestionErrors.invalidWriteKey());
    expect(res.statusCode).toBe(401);
    expect(json).toEqual({ ok: false, error: 'invalid_write_key' });
    expect(Object.keys(headers).sort()).toEqual(['content-length', 'content-type']);
  });

  it('sends no Retry-After when the detail is not a number', () => {
    const { headers } = answer(new AppError(503, 'x', 'y', { retryAfter: '5' }));
    expect(headers['retry-after']).toBeUndefined();
  });

  it('spells the body as the route family does', () => {
    const segment: ErrorBody = (code, message, details) => ({ success: false, code, message, ...details });
    const { res, json, headers } = answer(ingestionErrors.authUnavailable(5), segment);
    expect(res.statusCode).toBe(503);
    expect(json).toEqual({
      success: false,
      code: 'auth_unavailable',
      message: 'The write key cannot be checked now',
      retryAfter: 5,
    });
    expect(headers['retry-after']).toBe('5');
  });

  it('answers anything else 500 server_error, logged, without its message', async () => {
    const { res, json, lines } = answer(new Error('secret internals'));
    expect(res.statusCode).toBe(500);
    expect(json).toEqual({ ok: false, error: 'server_error' });
    const logged = await waitUntil('the error line', async () =>
      lines.find((l) => l.includes('request failed')),
    );
    // The log keeps what the answer leaves out.
    expect(JSON.parse(logged)).toMatchObject({
      level: 'error',
      message: 'request failed',
      error: { name: 'Error', message: 'secret internals' },
    });
  });

  it('passes the message and the details to the body', () => {
    const seen: unknown[] = [];
    answer(new AppError(400, 'c', 'm', { a: 1 }), (...args) => (seen.push(args), {}));
    answer(new AppError(400, 'c', 'm'), (...args) => (seen.push(args), {}));
    answer(new Error('x'), (...args) => (seen.push(args), {}));
    expect(seen).toEqual([
      ['c', 'm', { a: 1 }],
      ['c', 'm', {}],
      ['server_error', 'The request could not be handled', {}],
    ]);
  });
});

describe('ingestionErrorBody', () => {
  it('is ok: false, the code and the details', () => {
    expect(ingestionErrorBody('c', 'ignored', { a: 1 })).toStrictEqual({ ok: false, error: 'c', a: 1 });
  });
});
