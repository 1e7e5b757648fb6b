import proxyaddr from 'proxy-addr';
import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';

const unmapped = (address: string) =>
  address.startsWith('::ffff:') && isIP(address.slice(7)) === 4 ? address.slice(7) : address;

/**
 * The client's address (spec 2.7 context_ip, and the per-IP limits): walking X-Forwarded-For
 * from the right, the first hop that is not a configured trusted proxy (proxy-addr). Hops to
 * its left were written by the client and may be forged: a proxy that appends passes a forged
 * `X-Forwarded-For: 1.2.3.4` through as `1.2.3.4, <real address>`. Without trusted proxies the
 * header is ignored and the socket address is the client.
 */
export function clientAddressResolver(trustedProxies: readonly string[] | undefined) {
  const trust =
    trustedProxies && trustedProxies.length > 0 ? proxyaddr.compile([...trustedProxies]) : () => false;
  return (req: IncomingMessage): string | null => {
    const socket = req.socket.remoteAddress;
    if (!socket) return null;
    const address = unmapped(proxyaddr(req, trust));
    // A trusted proxy that passed a client's junk on without appending: keep the last real hop.
    if (isIP(address) !== 0) return address;
    const hops = proxyaddr.all(req, trust).map(unmapped);
    return [...hops].reverse().find((hop) => isIP(hop) !== 0) ?? unmapped(socket);
  };
}
