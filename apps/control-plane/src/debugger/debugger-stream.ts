import { Router, type Request, type Response } from 'express';
import { AppError } from '@pipeline/errors';
import type { Logger } from '@pipeline/logger';
import { createRedis, debuggerKeys, type Redis } from '@pipeline/redis';
import type { ApiKeyAuthenticator } from '../auth/api-key-authenticator';
import { debuggerUnavailable, toDebugEvent, type DebuggerService } from './debugger.service';

export const DEBUG_STREAM_PATH = '/api/v1/write-keys/:writeKeyId/events/stream';

export interface DebugStreamOptions {
  /** REDIS_URL: each stream reads on its own connection (XREAD BLOCK holds it). */
  redisUrl: string | undefined;
  /** Streams one API key may hold open at once. */
  maxStreamsPerKey?: number;
  /** Between `: keep-alive` comments while nothing arrives (the XREAD BLOCK timeout). */
  keepAliveMs?: number;
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

  router.get(DEBUG_STREAM_PATH, async (req: Request<{ writeKeyId: string }>, res: Response, next) => {
    let connection: Redis | undefined;
    let apiKeyId: string | undefined;
    try {
      const principal = await authenticator.authenticate(req, ['write_keys.read']);
      const redisUrl = options.redisUrl;
      if (!redisUrl || !service.available) throw debuggerUnavailable();
      const writeKeyId = await service.writeKeyOf(principal.accountId, req.params.writeKeyId);
      const held = open.get(principal.apiKeyId) ?? 0;
      if (held >= maxStreams)
        throw new AppError(
          429,
          'too_many_streams',
          `An API key may hold at most ${maxStreams} debugger streams open at once`,
        );
      apiKeyId = principal.apiKeyId;
      open.set(apiKeyId, held + 1);
      connection = createRedis({ REDIS_URL: redisUrl }, { logger });
      await connection.connect().catch(() => {
        throw debuggerUnavailable();
      });
      const key = debuggerKeys.events(writeKeyId);
      const header = req.headers['last-event-id'];
      const resumeFrom =
        typeof header === 'string' && streamId.test(header.trim()) ? header.trim() : undefined;
      // A concrete id, never `$`: nothing added between two reads is missed.
      let lastId =
        resumeFrom ??
        ((await connection.xrevrange(key, '+', '-', 'COUNT', 1)) as [string, string[]][])[0]?.[0] ??
        '0-0';

      res.writeHead(200, {
        'Content-Type': 'text/event-stream; charset=utf-8',
        'Cache-Control': 'no-cache, no-transform',
        Connection: 'keep-alive',
        'X-Accel-Buffering': 'no',
      });
      res.write(': connected\n\n');
      let closed = false;
      const reader = connection;
      res.on('close', () => {
        closed = true;
        reader.disconnect();
      });
      while (!closed) {
        let reply: [string, [string, string[]][]][] | null;
        try {
          reply = (await reader.xread('COUNT', 100, 'BLOCK', keepAliveMs, 'STREAMS', key, lastId)) as
            [string, [string, string[]][]][] | null;
        } catch (error) {
          if (!closed) logger.debug('debugger stream ended', { error: (error as Error).message });
          break;
        }
        if (closed) break;
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
      res.end();
    } catch (error) {
      if (res.headersSent) res.end();
      else next(error);
    } finally {
      connection?.disconnect();
      if (apiKeyId !== undefined) {
        const left = (open.get(apiKeyId) ?? 1) - 1;
        if (left <= 0) open.delete(apiKeyId);
        else open.set(apiKeyId, left);
      }
    }
  });
  return router;
}
