import type { lookup as dnsLookup } from 'node:dns';
import { parseAllowedRanges } from './address-policy';
import {
  allowedRangesKey,
  EgressRefused,
  guardedLookup,
  isEgressRefusal,
  literalRefusal,
  lookupOver,
  unbracketed,
} from './connection-guard';

/** A resolver answering fixed addresses (or an error) for every name, recording what it was asked. */
function resolver(answer: Error | string[]) {
  const asked: { hostname: string; options: unknown }[] = [];
  const resolve = ((hostname: string, options: unknown, callback: (...args: unknown[]) => void) => {
    asked.push({ hostname, options });
    if (answer instanceof Error) callback(answer);
    else
      callback(
        null,
        answer.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })),
      );
  }) as unknown as typeof dnsLookup;
  return { resolve, asked };
}

/** What the guarded lookup calls back with, as one list. */
function lookUp(answer: Error | string[], all: boolean, allowed: string[] = []) {
  const { resolve, asked } = resolver(answer);
  let result: unknown[] = [];
  guardedLookup(parseAllowedRanges(allowed), resolve)(
    'hooks.example',
    { all, family: 0 },
    (...args: unknown[]) => {
      result = args;
    },
  );
  return { result, asked };
}

describe('guardedLookup', () => {
  it('asks for every address of the name, whatever the caller asked for', () => {
    const { asked } = lookUp(['93.184.215.14'], false);
    expect(asked).toEqual([{ hostname: 'hooks.example', options: { all: true, family: 0 } }]);
  });

  it('answers the first address, or all of them when asked for all, when every one is public', () => {
    const answers = ['93.184.215.14', '2606:2800:21f:cb07:6820:80da:af6b:8b2c'];
    expect(lookUp(answers, false).result).toEqual([null, '93.184.215.14', 4]);
    expect(lookUp(answers, true).result).toEqual([
      null,
      [
        { address: '93.184.215.14', family: 4 },
        { address: '2606:2800:21f:cb07:6820:80da:af6b:8b2c', family: 6 },
      ],
    ]);
    expect(lookUp(['2606:4700:4700::1111'], false).result).toEqual([null, '2606:4700:4700::1111', 6]);
  });

  it('refuses the name when any one of its addresses is refused, naming the first refused', () => {
    for (const answers of [['10.1.2.3'], ['93.184.215.14', '10.1.2.3'], ['10.1.2.3', '127.0.0.1']]) {
      const [error, address, family] = lookUp(answers, false).result as [EgressRefused, string, number];
      expect([error, address, family]).toEqual([expect.any(EgressRefused), '', 0]);
      expect([error.address, error.range, error.code]).toEqual(['10.1.2.3', 'private', 'EGRESS_REFUSED']);
    }
  });

  it('lets an operator range through', () => {
    expect(lookUp(['10.1.2.3'], false, ['10.0.0.0/8']).result).toEqual([null, '10.1.2.3', 4]);
    expect(
      (lookUp(['10.1.2.3', '127.0.0.1'], false, ['10.0.0.0/8']).result[0] as EgressRefused).address,
    ).toBe('127.0.0.1');
  });

  it('passes a resolver’s error on, and treats no address as not found', () => {
    const failure = Object.assign(new Error('queryA ESERVFAIL'), { code: 'ESERVFAIL' });
    expect(lookUp(failure, false).result).toEqual([failure, '', 0]);
    const [notFound, address, family] = lookUp([], true).result as [Error & { code: string }, string, number];
    expect([notFound.message, notFound.code, address, family]).toEqual([
      'no address for hooks.example',
      'ENOTFOUND',
      '',
      0,
    ]);
  });
});

describe('literalRefusal', () => {
  it('refuses an IP literal the policy refuses, bracketed or not', () => {
    for (const [hostname, address, range] of [
      ['127.0.0.1', '127.0.0.1', 'loopback'],
      ['[::1]', '::1', 'loopback'],
      ['::1', '::1', 'loopback'],
      ['169.254.169.254', '169.254.169.254', 'linkLocal'],
    ] as const) {
      const refused = literalRefusal(hostname, []);
      expect(refused).toBeInstanceOf(EgressRefused);
      expect([refused?.address, refused?.range, refused?.message]).toEqual([
        address,
        range,
        `refused to connect to ${address} (${range})`,
      ]);
    }
  });

  it('leaves names to the lookup, and lets public and operator-allowed literals through', () => {
    expect(literalRefusal('localhost', [])).toBeUndefined();
    expect(literalRefusal('[localhost]', [])).toBeUndefined();
    expect(literalRefusal('93.184.215.14', [])).toBeUndefined();
    expect(literalRefusal('[2606:4700:4700::1111]', [])).toBeUndefined();
    expect(literalRefusal('10.1.2.3', parseAllowedRanges(['10.0.0.0/8']))).toBeUndefined();
    expect(literalRefusal('[fd00::1]', parseAllowedRanges(['fd00::/8']))).toBeUndefined();
  });

  it('reads only a whole bracketed literal as one', () => {
    expect(literalRefusal('x[::1]', [])).toBeUndefined();
    expect(literalRefusal('[::1]x', [])).toBeUndefined();
    // Brackets inside the text are not around it: what is left is not an address.
    expect(literalRefusal('1[0.0.0.1]', [])).toBeUndefined();
    expect(literalRefusal('[10.0.0.]1', [])).toBeUndefined();
    expect(literalRefusal('[10.0.0.1]', [])?.range).toBe('private');
  });
});

describe('unbracketed', () => {
  it('takes the brackets off a whole bracketed text only', () => {
    expect(unbracketed('[::1]')).toBe('::1');
    expect(unbracketed('[2001:db8::1]')).toBe('2001:db8::1');
    expect(unbracketed('hooks.example')).toBe('hooks.example');
    expect(unbracketed('x[::1]')).toBe('x[::1]');
    expect(unbracketed('[::1]x')).toBe('[::1]x');
    expect(unbracketed('[]')).toBe('');
  });
});

describe('isEgressRefusal', () => {
  it('finds a refusal as the error or anywhere along its causes', () => {
    const refused = new EgressRefused('10.0.0.1', 'private');
    expect(refused.name).toBe('EgressRefused');
    expect(isEgressRefusal(refused)).toBe(true);
    expect(isEgressRefusal(new TypeError('fetch failed', { cause: refused }))).toBe(true);
    expect(
      isEgressRefusal(new Error('outer', { cause: new TypeError('fetch failed', { cause: refused }) })),
    ).toBe(true);
  });

  it('is false for other failures, for nothing, and for a cause that is itself', () => {
    expect(isEgressRefusal(new TypeError('fetch failed', { cause: new Error('ECONNREFUSED') }))).toBe(false);
    expect(isEgressRefusal(new Error('no cause'))).toBe(false);
    expect(isEgressRefusal(null)).toBe(false);
    expect(isEgressRefusal(undefined)).toBe(false);
    const selfCaused = new Error('loop') as Error & { cause?: unknown };
    selfCaused.cause = selfCaused;
    expect(isEgressRefusal(selfCaused)).toBe(false);
  });
});

describe('allowedRangesKey', () => {
  it('keys a set of ranges the same in any order, and different sets apart', () => {
    expect(allowedRangesKey([])).toBe('');
    expect(allowedRangesKey(['127.0.0.2/32', '10.0.0.0/8'])).toBe('10.0.0.0/8,127.0.0.2/32');
    expect(allowedRangesKey(['10.0.0.0/8', '127.0.0.2/32'])).toBe('10.0.0.0/8,127.0.0.2/32');
    const ranges = ['fd00::/8', '10.0.0.0/8'];
    allowedRangesKey(ranges);
    expect(ranges).toEqual(['fd00::/8', '10.0.0.0/8']);
  });
});

describe('lookupOver', () => {
  it('answers every address with its family', async () => {
    const lookup = lookupOver(async () => ['93.184.215.14', '2606:2800:220:1::1']);
    const answer = await new Promise((resolve) =>
      (lookup as unknown as (h: string, o: unknown, cb: (e: unknown, a: unknown) => void) => void)(
        'h',
        {},
        (e, a) => resolve([e, a]),
      ),
    );
    expect(answer).toEqual([
      null,
      [
        { address: '93.184.215.14', family: 4 },
        { address: '2606:2800:220:1::1', family: 6 },
      ],
    ]);
  });

  it('answers a failed resolution as ENOTFOUND with its cause', async () => {
    const cause = new Error('SERVFAIL');
    const lookup = lookupOver(async () => {
      throw cause;
    });
    const [error, addresses] = await new Promise<[Error & { code?: string }, unknown]>((resolve) =>
      (lookup as unknown as (h: string, o: unknown, cb: (e: Error, a: unknown) => void) => void)(
        'db.example.com',
        {},
        (e, a) => resolve([e, a]),
      ),
    );
    expect(error.message).toBe('no address for db.example.com');
    expect(error.code).toBe('ENOTFOUND');
    expect(error.cause).toBe(cause);
    expect(addresses).toEqual([]);
  });
});
