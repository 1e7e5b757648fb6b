import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from '@pipeline/logger';
import { drainHttpServer } from './http-drain';
import type { Shutdown } from './shutdown';

export interface ServeHttpOptions {
  host: string;
  port: number;
  logger: Logger;
  shutdown: Shutdown;
  /**
   * How long in-flight requests may take to finish once shutdown starts; by default 60% of
   * the shutdown budget, leaving the rest for the steps after the drain.
   */
  drainMs?: number;
}

/**
 * Listens, and registers the drain as a shutdown step: registered after the pools and the
 * producer, it runs before them, so requests finish while their dependencies are still open.
 */
export async function serveHttp(handler: RequestListener, options: ServeHttpOptions): Promise<Server> {
  const server = createServer(handler);
  // Longer than a typical load balancer's idle timeout, so the balancer closes first.
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  options.logger.info('listening', { url: `http://${address.address}:${address.port}` });
  const drainMs = options.drainMs ?? Math.floor(options.shutdown.timeoutMs * 0.6);
  options.shutdown.add('http server', () => drainHttpServer(server, drainMs));
  return server;
}
