import type { Server } from 'node:http';

/**
 * Stops a server accepting connections and lets in-flight requests finish. Keep-alive
 * connections are closed as soon as they are idle, and responses written meanwhile carry
 * `Connection: close`, so clients reconnect elsewhere. After `graceMs` the remaining
 * connections are cut.
 */
export function drainHttpServer(server: Server, graceMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    if (!server.listening) {
      resolve();
      return;
    }
    server.on('request', (_req, res) => {
      if (!res.headersSent) res.setHeader('Connection', 'close');
    });
    const sweep = setInterval(() => server.closeIdleConnections(), 50);
    const cut = setTimeout(() => server.closeAllConnections(), graceMs);
    sweep.unref();
    cut.unref();
    server.close((error) => {
      clearInterval(sweep);
      clearTimeout(cut);
      if (error) reject(error);
      else resolve();
    });
    server.closeIdleConnections();
  });
}
