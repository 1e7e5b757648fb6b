import ipaddr from 'ipaddr.js';
import { isIPv4, isIPv6 } from 'node:net';

type Address = ipaddr.IPv4 | ipaddr.IPv6;

/** A CIDR range an operator allows, e.g. 10.20.0.0/16 or fd00:1::/64. */
export interface AllowedRange {
  readonly text: string;
  readonly range: [Address, number];
}

/** Parses `10.0.0.0/8`-style ranges; throws with the offending entry. */
export function parseAllowedRanges(values: readonly string[]): AllowedRange[] {
  return values.map((text) => {
    try {
      return { text, range: ipaddr.parseCIDR(text) };
    } catch {
      throw new Error(`"${text}" is not a CIDR range such as 10.0.0.0/8 or fd00::/8`);
    }
  });
}

type Table<A extends Address> = readonly (readonly [range: [A, number], name: string])[];

const table = <A extends Address>(entries: readonly (readonly [string, string])[]): Table<A> =>
  entries.map(([cidr, name]) => [ipaddr.parseCIDR(cidr) as [A, number], name] as const);

/**
 * IPv4 ranges that are not globally reachable (the IANA IPv4 special-purpose registry), first
 * match wins. 192.0.0.0/24 is refused whole: its two global anycast addresses (PCP, TURN) host
 * no webhook.
 */
const ipv4Refused = table<ipaddr.IPv4>([
  ['0.0.0.0/8', 'unspecified'],
  ['10.0.0.0/8', 'private'],
  ['100.64.0.0/10', 'carrierGradeNat'],
  ['127.0.0.0/8', 'loopback'],
  ['169.254.0.0/16', 'linkLocal'],
  ['172.16.0.0/12', 'private'],
  ['192.0.0.0/24', 'ietfProtocolAssignments'],
  ['192.0.2.0/24', 'documentation'],
  ['192.88.99.0/24', '6to4Relay'],
  ['192.168.0.0/16', 'private'],
  ['198.18.0.0/15', 'benchmarking'],
  ['198.51.100.0/24', 'documentation'],
  ['203.0.113.0/24', 'documentation'],
  ['224.0.0.0/4', 'multicast'],
  ['255.255.255.255/32', 'broadcast'],
  ['240.0.0.0/4', 'reserved'],
]);

/**
 * Parts of global unicast (2000::/3) that are not globally reachable or that carry another
 * address: all of 2001::/23 (IETF protocol assignments: Teredo, which embeds an IPv4 address
 * and a NAT's port; benchmarking; ORCHID; AMT; none hosts a tenant's endpoint), 6to4 (embeds an
 * IPv4 address that may be private) and both documentation prefixes.
 */
const globalRefused = table<ipaddr.IPv6>([
  ['2001::/32', 'teredo'],
  ['2001:db8::/32', 'documentation'],
  ['2001::/23', 'ietfProtocolAssignments'],
  ['2002::/16', '6to4'],
  ['3fff::/20', 'documentation'],
]);

/** Names for the rest of the IPv6 space, all refused; what none of them names is `reserved`. */
const ipv6Named = table<ipaddr.IPv6>([
  ['::/128', 'unspecified'],
  ['::1/128', 'loopback'],
  // Deprecated IPv4-compatible addresses (RFC 4291): a host may still route them to the IPv4.
  ['::/96', 'ipv4Compatible'],
  ['::ffff:0:0:0/96', 'ipv4Translated'],
  ['64:ff9b:1::/48', 'nat64LocalUse'],
  ['100::/64', 'discard'],
  ['fc00::/7', 'uniqueLocal'],
  ['fe80::/10', 'linkLocal'],
  ['fec0::/10', 'siteLocal'],
  ['ff00::/8', 'multicast'],
]);

const globalUnicast = ipaddr.parseCIDR('2000::/3') as [ipaddr.IPv6, number];
const mapped = ipaddr.parseCIDR('::ffff:0:0/96') as [ipaddr.IPv6, number];
const nat64 = ipaddr.parseCIDR('64:ff9b::/96') as [ipaddr.IPv6, number];

const nameIn = <A extends Address>(address: A, ranges: Table<A>): string | undefined =>
  ranges.find(([range]) => address.match(range))?.[1];

const isAllowed = (address: Address, allowed: readonly AllowedRange[]): boolean =>
  allowed.some(({ range }) => address.kind() === range[0].kind() && address.match(range));

function refusal(address: Address, allowed: readonly AllowedRange[]): string | undefined {
  if (isAllowed(address, allowed)) return undefined;
  if (address instanceof ipaddr.IPv4) return nameIn(address, ipv4Refused);
  // A mapped address is the IPv4 address itself; a NAT64 one (the well-known prefix) reaches
  // the IPv4 address it embeds: both are judged as that address.
  if (address.match(mapped) || address.match(nat64)) {
    return refusal(ipaddr.fromByteArray(address.toByteArray().slice(12)), allowed);
  }
  if (address.match(globalUnicast)) return nameIn(address, globalRefused);
  return nameIn(address, ipv6Named) ?? 'reserved';
}

/**
 * Why an address may not be connected to, or undefined when it may. Only globally reachable
 * unicast passes: for IPv4, what the IANA special-purpose registry does not list; for IPv6,
 * global unicast (2000::/3) outside 2001::/23, 6to4 and the documentation prefixes, or a
 * mapped or NAT64 address whose IPv4 address passes. An operator range passes whatever it
 * holds.
 */
export function addressRefusal(address: string, allowed: readonly AllowedRange[] = []): string | undefined {
  const parsed = parse(address);
  return parsed ? refusal(parsed, allowed) : 'unparseable';
}

/**
 * The address as the socket would use it, or undefined. ipaddr.js reads an IPv6 text with a
 * dotted tail (`::8.8.8.8`, how Node prints an IPv4-compatible answer) as the mapped address
 * ::ffff:8.8.8.8; the URL parser's all-hex form (`::808:808`) is read right. The zone of a
 * link-local address does not change its range.
 */
function parse(address: string): Address | undefined {
  if (isIPv4(address)) return ipaddr.IPv4.parse(address);
  if (!isIPv6(address)) return undefined;
  const hex = new URL(`http://[${address.split('%')[0]}]/`).hostname.slice(1, -1);
  return ipaddr.IPv6.parse(hex);
}
