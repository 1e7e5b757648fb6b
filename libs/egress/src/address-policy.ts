import ipaddr from 'ipaddr.js';

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

/**
 * Why an address may not be connected to, or undefined when it may. Only global unicast
 * passes: loopback, private (RFC 1918), CGNAT, link-local (cloud metadata), unique-local,
 * multicast, unspecified, broadcast, reserved, documentation and the IPv6 forms that embed an
 * IPv4 address (mapped, NAT64, 6to4, Teredo) are refused, unless an operator range holds them.
 */
export function addressRefusal(address: string, allowed: readonly AllowedRange[] = []): string | undefined {
  let parsed: Address;
  try {
    // process() turns ::ffff:10.0.0.1 into 10.0.0.1, so a mapped address is judged as IPv4.
    parsed = ipaddr.process(address);
  } catch {
    return 'unparseable';
  }
  for (const { range } of allowed) {
    if (parsed.kind() === range[0].kind() && parsed.match(range)) return undefined;
  }
  const range = parsed.range();
  return range === 'unicast' ? undefined : range;
}
