import fc from 'fast-check';
import { addressRefusal, parseAllowedRanges } from './address-policy';

// The oracle below is written from the IANA special-purpose registries with integer
// arithmetic, apart from the implementation (ipaddr.js ranges): each property compares them
// over random addresses, and random addresses inside every range.

const ipv4Text = (n: number) => [24, 16, 8, 0].map((shift) => (n >>> shift) & 255).join('.');

const ipv6Text = (n: bigint) =>
  Array.from({ length: 8 }, (_, i) => ((n >> BigInt(112 - 16 * i)) & 0xffffn).toString(16)).join(':');

const v4 = (cidr: string) => {
  const [address = '', length = '0'] = cidr.split('/');
  const base = address.split('.').reduce((sum, octet) => sum * 256 + Number(octet), 0);
  return { base, length: Number(length) };
};

const v6 = (cidr: string) => {
  const [address = '', length = '0'] = cidr.split('/');
  const [head = '', tail = ''] = address.split('::');
  const groups = (part: string) => (part === '' ? [] : part.split(':'));
  const all = [
    ...groups(head),
    ...Array(8 - groups(head).length - groups(tail).length).fill('0'),
    ...groups(tail),
  ];
  return {
    base: all.reduce((sum, group) => (sum << 16n) | BigInt(parseInt(group, 16)), 0n),
    length: Number(length),
  };
};

const inV4 = (n: number, { base, length }: { base: number; length: number }) =>
  length === 0 || n >>> (32 - length) === base >>> (32 - length);

const inV6 = (n: bigint, { base, length }: { base: bigint; length: number }) =>
  n >> BigInt(128 - length) === base >> BigInt(128 - length);

/** The IANA IPv4 special-purpose registry's ranges that are not globally reachable, and ours. */
const ipv4Ranges: [string, string][] = [
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
];

/** Inside 2000::/3: refused. */
const globalRefusedRanges: [string, string][] = [
  ['2001::/32', 'teredo'],
  ['2001:db8::/32', 'documentation'],
  ['2001::/23', 'ietfProtocolAssignments'],
  ['2002::/16', '6to4'],
  ['3fff::/20', 'documentation'],
];

/** Outside 2000::/3: all refused, these by name (the embedding ranges aside). */
const namedV6Ranges: [string, string][] = [
  ['::/128', 'unspecified'],
  ['::1/128', 'loopback'],
  ['::/96', 'ipv4Compatible'],
  ['::ffff:0:0:0/96', 'ipv4Translated'],
  ['64:ff9b:1::/48', 'nat64LocalUse'],
  ['100::/64', 'discard'],
  ['fc00::/7', 'uniqueLocal'],
  ['fe80::/10', 'linkLocal'],
  ['fec0::/10', 'siteLocal'],
  ['ff00::/8', 'multicast'],
];

const expectedV4 = (n: number) => ipv4Ranges.find(([cidr]) => inV4(n, v4(cidr)))?.[1];

const MAPPED = v6('::ffff:0:0/96');
const NAT64 = v6('64:ff9b::/96');
const GLOBAL = v6('2000::/3');

const expectedV6 = (n: bigint): string | undefined => {
  if (inV6(n, MAPPED) || inV6(n, NAT64)) return expectedV4(Number(n & 0xffffffffn));
  if (inV6(n, GLOBAL)) return globalRefusedRanges.find(([cidr]) => inV6(n, v6(cidr)))?.[1];
  return namedV6Ranges.find(([cidr]) => inV6(n, v6(cidr)))?.[1] ?? 'reserved';
};

const anyV4 = fc.integer({ min: 0, max: 0xffffffff });
const anyV6 = fc.bigInt({ min: 0n, max: (1n << 128n) - 1n });

/** A random address inside the range: its prefix, random host bits. */
const insideV4 = (cidr: string) =>
  anyV4.map((random) => {
    const { base, length } = v4(cidr);
    const hostMask = length === 32 ? 0 : 0xffffffff >>> length;
    return ((base & ~hostMask) | (random & hostMask)) >>> 0;
  });

const insideV6 = (cidr: string) =>
  anyV6.map((random) => {
    const { base, length } = v6(cidr);
    const hostMask = (1n << BigInt(128 - length)) - 1n;
    return (base & ~hostMask) | (random & hostMask);
  });

describe('addressRefusal', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['10.0.0.12', 'private'],
    ['172.16.5.4', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['100.64.0.1', 'carrierGradeNat'],
    ['169.254.169.254', 'linkLocal'],
    ['0.0.0.0', 'unspecified'],
    ['224.0.0.1', 'multicast'],
    ['255.255.255.255', 'broadcast'],
    ['255.255.255.254', 'reserved'],
    ['192.0.0.9', 'ietfProtocolAssignments'],
    ['192.0.2.10', 'documentation'],
    ['198.19.255.1', 'benchmarking'],
    ['::1', 'loopback'],
    ['::', 'unspecified'],
    ['fe80::1', 'linkLocal'],
    ['fe80::1%eth0', 'linkLocal'],
    ['fd00:ec2::254', 'uniqueLocal'],
    ['ff02::1', 'multicast'],
    ['::ffff:10.0.0.1', 'private'],
    ['::ffff:169.254.169.254', 'linkLocal'],
    ['::ffff:127.0.0.1', 'loopback'],
    // IPv4-compatible: refused whatever it embeds, a public address too.
    ['::8.8.8.8', 'ipv4Compatible'],
    ['::a9fe:a9fe', 'ipv4Compatible'],
    ['::ffff:0:a00:1', 'ipv4Translated'],
    // NAT64 (well-known prefix): judged by the IPv4 address it embeds.
    ['64:ff9b::a00:1', 'private'],
    ['64:ff9b::127.0.0.1', 'loopback'],
    ['64:ff9b:1::808:808', 'nat64LocalUse'],
    ['100::1', 'discard'],
    ['2001::1', 'teredo'],
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'teredo'],
    ['2001:2::1', 'ietfProtocolAssignments'],
    ['2001:20::1', 'ietfProtocolAssignments'],
    ['2001:1ff:ffff::1', 'ietfProtocolAssignments'],
    ['2001:db8::1', 'documentation'],
    ['3fff:fff::1', 'documentation'],
    ['2002:a00:1::', '6to4'],
    ['2002:808:808::1', '6to4'],
    ['fec0::1', 'siteLocal'],
    ['4000::1', 'reserved'],
    ['1::1', 'reserved'],
    ['5f00::1', 'reserved'],
    ['not an address', 'unparseable'],
    ['', 'unparseable'],
    ['10.0.0.0/8', 'unparseable'],
    // Only the forms a socket address is printed in: no shorthand IPv4, no brackets or ports.
    ['127.1', 'unparseable'],
    ['0x7f.0.0.1', 'unparseable'],
    ['[::1]', 'unparseable'],
    ['::1]:80/x', 'unparseable'],
    ['::10.0.0.1', 'ipv4Compatible'],
  ])('refuses %s (%s)', (address, range) => {
    expect(addressRefusal(address)).toBe(range);
  });

  it.each([
    '8.8.8.8',
    '1.1.1.1',
    '172.32.0.1',
    '100.128.0.1',
    '192.0.1.1',
    '223.255.255.255',
    '2606:4700:4700::1111',
    '2001:200::1',
    '2001:4860:4860::8888',
    '2003::1',
    '3fff:1000::1',
    '3ffe::1',
    '::ffff:8.8.8.8',
    '64:ff9b::8.8.8.8',
  ])('allows the public %s', (address) => {
    expect(addressRefusal(address)).toBeUndefined();
  });

  it('judges every IPv4 address as the registry does', () => {
    fc.assert(
      fc.property(anyV4, (n) => {
        expect(addressRefusal(ipv4Text(n))).toBe(expectedV4(n));
      }),
      { numRuns: 2000 },
    );
  });

  it('refuses every address inside each IPv4 range, by its name', () => {
    for (const [cidr, name] of ipv4Ranges) {
      fc.assert(
        // Inside 240.0.0.0/4, the broadcast address has its own name.
        fc.property(
          insideV4(cidr).filter((n) => name !== 'reserved' || n !== 0xffffffff),
          (n) => {
            expect(addressRefusal(ipv4Text(n))).toBe(name);
          },
        ),
        { numRuns: 100 },
      );
    }
  });

  it('judges every IPv6 address as the registry does, global unicast or not', () => {
    fc.assert(
      fc.property(fc.oneof(anyV6, insideV6('2000::/3')), (n) => {
        expect(addressRefusal(ipv6Text(n))).toBe(expectedV6(n));
      }),
      { numRuns: 2000 },
    );
  });

  it('refuses every address inside each IPv6 range, by its name', () => {
    for (const [cidr, name] of [...globalRefusedRanges, ...namedV6Ranges.slice(2)]) {
      fc.assert(
        fc.property(
          insideV6(cidr).filter(
            (n) =>
              !globalRefusedRanges
                .concat(namedV6Ranges)
                .some(
                  ([other, otherName]) =>
                    otherName !== name && v6(other).length > v6(cidr).length && inV6(n, v6(other)),
                ),
          ),
          (n) => {
            expect(addressRefusal(ipv6Text(n))).toBe(name);
          },
        ),
        { numRuns: 100 },
      );
    }
  });

  it('judges a mapped and a NAT64 address as the IPv4 address they embed', () => {
    fc.assert(
      fc.property(anyV4, (n) => {
        const expected = expectedV4(n);
        expect(addressRefusal(`::ffff:${ipv4Text(n)}`)).toBe(expected);
        expect(addressRefusal(`64:ff9b::${ipv4Text(n)}`)).toBe(expected);
        // An IPv4-compatible address is refused whatever it embeds (but :: and ::1 by their names).
        if (n > 1) expect(addressRefusal(`::${ipv4Text(n)}`)).toBe('ipv4Compatible');
      }),
      { numRuns: 1000 },
    );
  });

  it('allows exactly the ranges an operator names', () => {
    const allowed = parseAllowedRanges(['10.20.0.0/16', 'fd00:1::/64']);
    expect(addressRefusal('10.20.3.4', allowed)).toBeUndefined();
    expect(addressRefusal('::ffff:10.20.3.4', allowed)).toBeUndefined();
    expect(addressRefusal('64:ff9b::10.20.3.4', allowed)).toBeUndefined();
    expect(addressRefusal('10.21.0.1', allowed)).toBe('private');
    expect(addressRefusal('fd00:1::5', allowed)).toBeUndefined();
    expect(addressRefusal('fd00:2::5', allowed)).toBe('uniqueLocal');
    expect(addressRefusal('169.254.169.254', allowed)).toBe('linkLocal');
    // An IPv6 range never holds an IPv4 address, nor the reverse.
    expect(addressRefusal('10.0.0.1', parseAllowedRanges(['::/0']))).toBe('private');
    expect(addressRefusal('::1', parseAllowedRanges(['0.0.0.0/0']))).toBe('loopback');
  });

  it('allows any address inside an operator range, and refuses one just outside it', () => {
    fc.assert(
      fc.property(anyV4, fc.integer({ min: 8, max: 32 }), (n, length) => {
        const hostMask = length === 32 ? 0 : 0xffffffff >>> length;
        const network = (n & ~hostMask) >>> 0;
        const allowed = parseAllowedRanges([`${ipv4Text(network)}/${length}`]);
        expect(addressRefusal(ipv4Text(n), allowed)).toBeUndefined();
        const outside = ((network + hostMask + 1) >>> 0) & 0xffffffff;
        if (outside !== network) expect(addressRefusal(ipv4Text(outside), allowed)).toBe(expectedV4(outside));
      }),
      { numRuns: 500 },
    );
  });

  it('names a range that is not CIDR', () => {
    expect(() => parseAllowedRanges(['10.0.0.0/8', '10.0.0.0'])).toThrow(
      '"10.0.0.0" is not a CIDR range such as 10.0.0.0/8 or fd00::/8',
    );
    expect(parseAllowedRanges(['10.0.0.0/8'])).toEqual([
      { text: '10.0.0.0/8', range: [expect.objectContaining({ octets: [10, 0, 0, 0] }), 8] },
    ]);
  });
});
