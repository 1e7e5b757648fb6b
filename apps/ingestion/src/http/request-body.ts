import type { IncomingMessage } from 'node:http';
import type { Readable } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import { ingestionErrors } from '../collect/ingestion-errors';

/** Bodies above this (after decoding) are refused with 413 payload_too_large. */
export const MAX_BODY_BYTES = 2 * 1024 * 1024;

function decoded(req: IncomingMessage): Readable {
  const encoding = (req.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
  if (encoding === 'identity' || encoding === '') return req;
  if (encoding === 'gzip' || encoding === 'x-gzip') return req.pipe(createGunzip());
  if (encoding === 'deflate') return req.pipe(createInflate());
  if (encoding === 'br') return req.pipe(createBrotliDecompress());
  throw ingestionErrors.invalidPayload(`content-encoding ${encoding} is not supported`);
}

/**
 * Reads a request body whatever its content type (sendBeacon posts text/plain), decoding
 * gzip, deflate and br, up to `limit` bytes. Rejects with the documented errors: 413 when it is
 * larger, 400 invalid_payload when it cannot be read.
 */
export function readRequestBody(req: IncomingMessage, limit = MAX_BODY_BYTES): Promise<Buffer> {
  return new Promise<Buffer>((resolve, reject) => {
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > limit) {
      // Drained, not destroyed: the answer still reaches the client on a kept-alive connection.
      req.resume();
      reject(ingestionErrors.payloadTooLarge(limit));
      return;
    }
    let stream: Readable;
    try {
      stream = decoded(req);
    } catch (error) {
      req.resume();
      reject(error as Error);
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const fail = (error: Error) => {
      if (settled) return;
      settled = true;
      if (stream !== req) stream.destroy();
      req.resume();
      reject(error);
    };
    stream.on('data', (chunk: Buffer) => {
      if (settled) return;
      size += chunk.length;
      if (size > limit) fail(ingestionErrors.payloadTooLarge(limit));
      else chunks.push(chunk);
    });
    stream.once('end', () => {
      if (settled) return;
      settled = true;
      resolve(chunks.length === 1 && chunks[0] ? chunks[0] : Buffer.concat(chunks, size));
    });
    stream.once('error', () => fail(ingestionErrors.invalidPayload('the body could not be read')));
    req.once('aborted', () => fail(ingestionErrors.invalidPayload('the body could not be read')));
  });
}
