import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A slow vendor: a proxy in front of a look-alike that forwards a set number of requests and
 * keeps the rest waiting until `release()`. Tests use it to hold a job mid-sync for as long as
 * they need, without a fixed sleep.
 */
export interface HoldingProxy {
  readonly url: string;
  /** Requests waiting now. */
  held(): number;
  /** Lets `more` requests through from now on, then holds the rest. */
  holdAfter(more: number): void;
  /** Forwards the held requests and stops holding. */
  release(): void;
  close(): Promise<void>;
}

/** `holdAfter`: how many requests go through before the proxy holds (0: it holds them all). */
export async function startHoldingProxy(
  target: string,
  options: { holdAfter?: number } = {},
): Promise<HoldingProxy> {
  const upstream = new URL(target);
  const waiting: (() => void)[] = [];
  let forwarded = 0;
  let limit = options.holdAfter ?? 0;
  const forward = (req: IncomingMessage, body: Buffer, res: ServerResponse) => {
    const out = request(
      {
        host: upstream.hostname,
        port: upstream.port,
        method: req.method,
        path: req.url,
        headers: { ...req.headers, host: upstream.host },
      },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    out.on('error', () => res.destroy());
    out.end(body);
  };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const send = () => {
        forwarded += 1;
        forward(req, Buffer.concat(chunks), res);
      };
      if (forwarded < limit) return send();
      waiting.push(send);
      // A client that gives up is no longer held.
      res.on('close', () => {
        const at = waiting.indexOf(send);
        if (at >= 0) waiting.splice(at, 1);
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    held: () => waiting.length,
    holdAfter: (more) => {
      limit = forwarded + more;
    },
    release: () => {
      limit = Infinity;
      for (const send of waiting.splice(0)) send();
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
