import { Router, type Request, type Response } from 'express';
import { AppError } from '@pipeline/errors';
import type { Logger } from '@pipeline/logger';
import { createRedis, debuggerKeys, type RedisClient, type RedisConnection } from '@pipeline/redis';
import type { ApiKeyAuthenticator } from '../auth/api-key-authenticator';
import { debuggerUnavailable, toDebugEvent, type DebuggerService } from './debugger.service';

export const DEBUG_STREAM_PATH = '/api/v1/write-keys/:writeKeyId/events/stream';

export interface DebugStreamOptions {
  /** Where each stream reads, on its own connection (XREAD BLOCK holds it); unset: 503. */
  connection: RedisConnection | undefined;
  /** Streams one API key may hold open at once. */
  maxStreamsPerKey?: number;
  /** Between `: keep-alive` comments while nothing arrives (the XREAD BLOCK timeout). */
  keepAliveMs?: number;
  /** Between checks that the stream's API key is still active. */
  revalidateMs?: number;
}

const streamId = /^\d{1,20}-\d{1,20}$/;

/**
 * `GET /api/v1/write-keys/{id}/events/stream`: the write key's new debugger events as
 * server-sent events (docs/management-api.md, "Debugger"). An express route, not tsoa's: tsoa
 * answers JSON only. Authenticated like the API (Authorization: Bearer, scope
 * `write_keys.read`); each stream holds one Redis connection in XREAD BLOCK, closed when the
 * client goes away; at most `maxStreamsPerKey` streams per API key (429 too_many_streams).
 */
export function debugStreamRouter(
  authenticator: ApiKeyAuthenticator,
  service: DebuggerService,
  logger: Logger,
  options: DebugStreamOptions,
): Router {
  const router = Router();
  const open = new Map<string, number>();
  const maxStreams = options.maxStreamsPerKey ?? 5;
  const keepAliveMs = options.keepAliveMs ?? 15_000;
  const revalidateMs = options.revalidateMs ?? 5_000;

  router.get(DEBUG_STREAM_PATH, async (req: Request<{ writeKeyId: string }>, res: Response, next) => {
    // Listened for before the first await: a client that hangs up while its key is checked has
    // already closed by the time the stream would start, and 'close' does not fire twice. Every
    // await below is followed by a look at `gone`, and the finally block releases what was taken.
    const gone = new AbortController();
    const hangUp = () => gone.abort();
    res.once('close', hangUp);
    // Gone before this handler ran (the rate limiter's lookup comes first).
    if (req.socket.destroyed) hangUp();
    let connection: RedisClient | undefined;
    gone.signal.addEventListener('abort', () => connection?.disconnect(), { once: true });
    let apiKeyId: string | undefined;
    let revalidation: NodeJS.Timeout | undefined;
    try {
      const principal = await authenticator.authenticate(req, ['write_keys.read']);
      const redisConnection = options.connection;
      if (!redisConnection || !service.available) throw debuggerUnavailable();
      const writeKeyId = await service.writeKeyOf(principal.accountId, req.params.writeKeyId);
      if (gone.signal.aborted) return;
      const held = open.get(principal.apiKeyId) ?? 0;
      if (held >= maxStreams)
        throw new AppError(
          429,
          'too_many_streams',
          `An API key may hold at most ${maxStreams} debugger streams open at once`,
        );
      apiKeyId = principal.apiKeyId;
      open.set(apiKeyId, held + 1);
      const reader = createRedis(redisConnection, {
        logger,
        connectionName: `debugger-stream:${writeKeyId}`,
      });
      connection = reader;
      await reader.connect().catch(() => {
        throw debuggerUnavailable();
      });
      if (gone.signal.aborted) return;
      const key = debuggerKeys.events(writeKeyId);
      const header = req.headers['last-event-id'];
      const resumeFrom =
        typeof header === 'string' && streamId.test(header.trim()) ? header.trim() : undefined;
      // A concrete id, never `$`: nothing added between two reads is missed.
      let lastId =
        resumeFrom ??
        ((await reader.xrevrange(key, '+', '-', 'COUNT', 1)) as [string, string[]][])[0]?.[0] ??
        '0-0';
      if (gone.signal.aborted) return;

      res.writeHead(200, {
        'Content-Type': 'text/event-stream; charset=utf-8',
        'Cache-Control': 'no-cache, no-transform',
        Connection: 'keep-alive',
        'X-Accel-Buffering': 'no',
      });
      res.write(': connected\n\n');
      // API keys are revoked in the database by the operator CLI, often in another process: the
      // stream asks again on a timer rather than trusting the check it started with. A failed
      // check ends the stream too; the client reconnects and is authenticated afresh.
      const streamKeyId = apiKeyId;
      revalidation = setInterval(() => {
        authenticator.isActive(streamKeyId).then(
          (active) => {
            if (active || gone.signal.aborted) return;
            // A comment, not an event: readers that take every `data:` as a DebugEvent (the console)
            // skip it, and their reconnect is answered 401 invalid_api_key.
            res.write(': end invalid_api_key\n\n');
            hangUp();
          },
          (error: unknown) => {
            logger.warn('debugger stream: API key check failed, ending the stream', {
              error: error instanceof Error ? error.message : String(error),
            });
            hangUp();
          },
        );
      }, revalidateMs);
      while (!gone.signal.aborted) {
        let reply: [string, [string, string[]][]][] | null;
        try {
          reply = (await reader.xread('COUNT', 100, 'BLOCK', keepAliveMs, 'STREAMS', key, lastId)) as
            [string, [string, string[]][]][] | null;
        } catch (error) {
          if (!gone.signal.aborted)
            logger.debug('debugger stream ended', { error: (error as Error).message });
          break;
        }
        if (gone.signal.aborted) break;
        if (!reply) {
          res.write(': keep-alive\n\n');
          continue;
        }
        for (const [, entries] of reply) {
          for (const entry of entries) {
            lastId = entry[0];
            const event = toDebugEvent(entry);
            if (event) res.write(`id: ${event.id}\nevent: debug-event\ndata: ${JSON.stringify(event)}\n\n`);
          }
        }
      }
    } catch (error) {
      // Nobody is left to answer once the client hung up.
      if (!gone.signal.aborted && !res.headersSent) next(error);
    } finally {
      clearInterval(revalidation);
      res.off('close', hangUp);
      // Also ends on a Redis failure: a key check still on its way then writes nothing.
      hangUp();
      connection?.disconnect();
      if (res.headersSent && !res.writableEnded) res.end();
      if (apiKeyId !== undefined) {
        const left = (open.get(apiKeyId) ?? 1) - 1;
        if (left <= 0) open.delete(apiKeyId);
        else open.set(apiKeyId, left);
      }
    }
  });
  return router;
}
