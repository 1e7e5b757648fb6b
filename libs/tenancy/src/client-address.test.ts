import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';
import fc from 'fast-check';
import { addressLimitKey, clientAddressResolver, UNPARSED_ADDRESS_KEY } from './client-address';

/** The two things of a request the resolver reads: the socket's address and X-Forwarded-For. */
const request = (socket: string | undefined, forwardedFor?: string) =>
  ({
    socket: { remoteAddress: socket },
    headers: forwardedFor === undefined ? {} : { 'x-forwarded-for': forwardedFor },
  }) as unknown as IncomingMessage;

describe('clientAddressResolver', () => {
  it('without trusted proxies, ignores X-Forwarded-For: the socket is the client', () => {
    for (const proxies of [undefined, []]) {
      const resolve = clientAddressResolver(proxies);
      expect(resolve(request('203.0.113.7', '198.51.100.1'))).toBe('203.0.113.7');
      expect(resolve(request('10.0.0.1', '198.51.100.1, 10.0.0.2'))).toBe('10.0.0.1');
      expect(resolve(request('::ffff:203.0.113.7'))).toBe('203.0.113.7');
      expect(resolve(request('2001:db8::1'))).toBe('2001:db8::1');
    }
  });

  it('answers null for a request whose socket has no address (already closed)', () => {
    expect(clientAddressResolver(undefined)(request(undefined, '198.51.100.1'))).toBeNull();
    expect(clientAddressResolver(['10.0.0.0/8'])(request(undefined, '198.51.100.1'))).toBeNull();
  });

  it('walks X-Forwarded-For from the right to the first hop that is not a trusted proxy', () => {
    const resolve = clientAddressResolver(['10.0.0.0/8']);
    expect(resolve(request('10.0.0.1', '198.51.100.1'))).toBe('198.51.100.1');
    expect(resolve(request('10.0.0.1', '198.51.100.1, 10.0.0.2'))).toBe('198.51.100.1');
    // A forged first hop is left of the real client, which the proxy appended.
    expect(resolve(request('10.0.0.1', '1.2.3.4, 198.51.100.1'))).toBe('198.51.100.1');
    expect(resolve(request('10.0.0.1', '::ffff:198.51.100.9'))).toBe('198.51.100.9');
    // A socket that is not a trusted proxy is the client, whatever it says.
    expect(resolve(request('203.0.113.7', '198.51.100.1'))).toBe('203.0.113.7');
    // A trusted proxy without the header: the proxy is all there is.
    expect(resolve(request('10.0.0.1'))).toBe('10.0.0.1');
  });

  it('keeps the last real hop when a trusted proxy passed a client’s junk on without appending', () => {
    const resolve = clientAddressResolver(['10.0.0.0/8']);
    expect(resolve(request('10.0.0.1', 'junk'))).toBe('10.0.0.1');
    expect(resolve(request('10.0.0.1', '198.51.100.1, junk'))).toBe('10.0.0.1');
    expect(resolve(request('10.0.0.1', 'junk, 10.0.0.2'))).toBe('10.0.0.2');
    expect(resolve(request('::ffff:10.0.0.1', 'junk'))).toBe('10.0.0.1');
    expect(clientAddressResolver(['::ffff:10.0.0.0/104'])(request('::ffff:10.0.0.1', 'junk'))).toBe(
      '10.0.0.1',
    );
  });

  it('answers a socket address that is no IP address as it is, unmapped', () => {
    expect(clientAddressResolver(['10.0.0.0/8'])(request('not-an-address', 'junk'))).toBe('not-an-address');
    expect(clientAddressResolver(undefined)(request('::ffff:not-ipv4'))).toBe('::ffff:not-ipv4');
    expect(clientAddressResolver(undefined)(request('::ffff:2001:db8::1'))).toBe('::ffff:2001:db8::1');
    expect(clientAddressResolver(undefined)(request('abcdefg10.0.0.1'))).toBe('abcdefg10.0.0.1');
    expect(clientAddressResolver(['10.0.0.0/8'])(request('abcdefg10.0.0.1', '10.0.0.2'))).toBe(
      'abcdefg10.0.0.1',
    );
  });
});

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
    expect(UNPARSED_ADDRESS_KEY).not.toBe('');
    expect(isIP(UNPARSED_ADDRESS_KEY)).toBe(0);
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
