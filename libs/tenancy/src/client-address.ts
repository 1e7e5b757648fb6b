import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import proxyaddr from 'proxy-addr';

const unmapped = (address: string) =>
  address.startsWith('::ffff:') && isIP(address.slice(7)) === 4 ? address.slice(7) : address;

/**
 * The client's address (`context_ip`, docs/tracking-api.md#auth-modes, and the per-address limits,
 * docs/tracking-api.md#rate-limits): walking
 * X-Forwarded-For from the right, the first hop that is not a configured trusted proxy
 * (proxy-addr). Hops to its left were written by the client and may be forged: a proxy that
 * appends passes a forged `X-Forwarded-For: 1.2.3.4` through as `1.2.3.4, <real address>`.
 * Without trusted proxies the header is ignored and the socket address is the client.
 */
export function clientAddressResolver(trustedProxies: readonly string[] | undefined) {
  // No trusted proxies: nothing is trusted, the socket is the client.
  const trust = proxyaddr.compile([...(trustedProxies ?? [])]);
  return (req: IncomingMessage): string | null => {
    const socket = req.socket.remoteAddress;
    if (!socket) return null;
    // From the client proxy-addr picks (the last hop), back to the last real address: a trusted
    // proxy may have passed a client's junk on without appending.
    const hops = proxyaddr.all(req, trust).map(unmapped);
    return hops.reverse().find((hop) => isIP(hop) !== 0) ?? unmapped(socket);
  };
}

/** The one bucket of every text that is not an IP address: junk cannot buy fresh budgets. */
export const UNPARSED_ADDRESS_KEY = 'unparsed';

/**
 * The key a per-address limit counts a client under. An IPv4 address is itself; an IPv6
 * address is its /64 prefix (`2001:db8:1:2::/64`), the smallest block an ISP or a cloud gives
 * one customer (RFC 6177), so rotating through the 2^64 addresses one subscriber holds buys no
 * extra budget. The text is normalised first: `::ffff:192.0.2.1` (an IPv4 client on a
 * dual-stack socket, in either notation) counts as `192.0.2.1`, case, leading zeros, `::`
 * compression and a zone (`%eth0`) make no difference. Anything that is not an IP address
 * shares one key.
 */
export function addressLimitKey(address: string): string {
  const text = address.trim();
  // Node's strict parser first: ipaddr.js also reads `127.1` and `2130706433` as addresses.
  // Both accept a zone (`fe80::1%eth0`); the key is built from the groups alone.
  if (isIP(text) === 0) return UNPARSED_ADDRESS_KEY;
  const parsed = ipaddr.process(text);
  if (parsed.kind() === 'ipv4') return parsed.toString();
  const [a = 0, b = 0, c = 0, d = 0] = (parsed as ipaddr.IPv6).parts;
  return `${new ipaddr.IPv6([a, b, c, d, 0, 0, 0, 0]).toString()}/64`;
}
