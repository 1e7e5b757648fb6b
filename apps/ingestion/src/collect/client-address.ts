import proxyaddr from 'proxy-addr';
import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';

/**
 * The client's address (spec 2.7 context_ip): the first X-Forwarded-For hop when the
 * connection comes from a configured trusted proxy, the socket address otherwise. A forged
 * header from anyone else is ignored.
 */
export function clientAddressResolver(trustedProxies: readonly string[] | undefined) {
  const trust =
    trustedProxies && trustedProxies.length > 0 ? proxyaddr.compile([...trustedProxies]) : () => false;
  return (req: IncomingMessage): string | null => {
    const socket = req.socket.remoteAddress ?? null;
    if (!socket) return null;
    const peer = socket.startsWith('::ffff:') ? socket.slice(7) : socket;
    if (!trust(peer, 0)) return peer;
    const header = req.headers['x-forwarded-for'];
    const first = (Array.isArray(header) ? header[0] : header)?.split(',')[0]?.trim();
    return first && isIP(first) ? first : peer;
  };
}
