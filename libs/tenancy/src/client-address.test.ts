import fc from 'fast-check';
import { addressLimitKey, UNPARSED_ADDRESS_KEY } from './client-address';

const hex = (n: number) => n.toString(16);
/** Eight 16-bit groups; the first is never 0, so no generated address is IPv4-mapped. */
const groups = fc.tuple(
  fc.integer({ min: 1, max: 0xffff }),
  ...Array.from({ length: 7 }, () => fc.integer({ min: 0, max: 0xffff })),
);
const ipv4 = fc.tuple(...Array.from({ length: 4 }, () => fc.integer({ min: 0, max: 255 })));
const expanded = (parts: readonly number[]) => parts.map((p) => hex(p).padStart(4, '0')).join(':');

describe('addressLimitKey', () => {
  it('keys an IPv6 address by its /64 prefix, written in its shortest form', () => {
    expect(addressLimitKey('2001:db8:1:2:3:4:5:6')).toBe('2001:db8:1:2::/64');
    expect(addressLimitKey('2001:db8:1:2::')).toBe('2001:db8:1:2::/64');
    expect(addressLimitKey('2001:db8:1:2:ffff:ffff:ffff:ffff')).toBe('2001:db8:1:2::/64');
    expect(addressLimitKey('2001:db8:1:3::1')).toBe('2001:db8:1:3::/64');
    expect(addressLimitKey('2001:0DB8:0000:0000:0000:0000:0000:0001')).toBe('2001:db8::/64');
    expect(addressLimitKey('fe80::1%eth0')).toBe('fe80::/64');
    expect(addressLimitKey('::1')).toBe('::/64');
    expect(addressLimitKey(' 2001:db8::7 ')).toBe('2001:db8::/64');
  });

  it('keys an IPv4 address, plain or mapped into IPv6 in either notation, as itself', () => {
    expect(addressLimitKey('203.0.113.7')).toBe('203.0.113.7');
    expect(addressLimitKey('::ffff:203.0.113.7')).toBe('203.0.113.7');
    expect(addressLimitKey('::FFFF:cb00:7107')).toBe('203.0.113.7');
    expect(addressLimitKey('0:0:0:0:0:ffff:cb00:7107')).toBe('203.0.113.7');
    expect(addressLimitKey('203.0.113.8')).toBe('203.0.113.8');
  });

  it('puts every text that is not an address in one key', () => {
    for (const junk of [
      '',
      'unknown',
      'foo',
      '127.1',
      '2130706433',
      '1.2.3.4.5',
      '2001:db8::1::2',
      '::ffff:1.2.3',
    ])
      expect([junk, addressLimitKey(junk)]).toEqual([junk, UNPARSED_ADDRESS_KEY]);
  });

  it('gives every address of one /64 the same key, whatever its last 64 bits or notation', () => {
    fc.assert(
      fc.property(
        groups,
        fc.tuple(...Array.from({ length: 4 }, () => fc.integer({ min: 0, max: 0xffff }))),
        (a, tail) => {
          const b = [...a.slice(0, 4), ...tail];
          const key = addressLimitKey(a.map(hex).join(':'));
          expect(addressLimitKey(expanded(b))).toBe(key);
          expect(addressLimitKey(expanded(b).toUpperCase())).toBe(key);
          expect(key.endsWith('::/64')).toBe(true);
        },
      ),
    );
  });

  it('gives addresses of different /64s different keys', () => {
    fc.assert(
      fc.property(groups, groups, (a, b) => {
        fc.pre(a.slice(0, 4).join() !== b.slice(0, 4).join());
        expect(addressLimitKey(expanded(a))).not.toBe(addressLimitKey(expanded(b)));
      }),
    );
  });

  it('keys each IPv4 address apart, the same as its IPv4-mapped forms', () => {
    fc.assert(
      fc.property(ipv4, ipv4, (a, b) => {
        const text = a.join('.');
        expect(addressLimitKey(text)).toBe(text);
        expect(addressLimitKey(`::ffff:${text}`)).toBe(text);
        const high = (a[0] << 8) | a[1];
        const low = (a[2] << 8) | a[3];
        expect(addressLimitKey(`::ffff:${hex(high)}:${hex(low)}`)).toBe(text);
        if (a.join() !== b.join()) expect(addressLimitKey(b.join('.'))).not.toBe(text);
      }),
    );
  });
});
