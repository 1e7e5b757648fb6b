import { bearerToken, presentsKey } from './bearer-token';

describe('bearerToken', () => {
  it.each([
    ['Bearer plk_abc', 'plk_abc'],
    ['bearer plk_abc', 'plk_abc'],
    ['BEARER   plk_abc  ', 'plk_abc'],
    ['Bearer\tplk_abc', 'plk_abc'],
  ])('takes the key of %j', (header, key) => {
    expect(bearerToken(header)).toBe(key);
  });

  it.each([
    undefined,
    '',
    'Bearer',
    'Bearer ',
    'Bearerplk_abc',
    'Basic plk_abc',
    ' Bearer plk_abc',
    'Bearer a b',
    'x Bearer a',
  ])('finds no key in %j', (header) => {
    expect(bearerToken(header)).toBeUndefined();
  });
});

describe('presentsKey', () => {
  it.each(['Bearer plk_abc', 'bearer x', 'Bearer a b', 'Bearer  x'])(
    'counts %j as a presented key',
    (header) => {
      expect(presentsKey(header)).toBe(true);
    },
  );

  it.each([undefined, '', 'Bearer', 'Bearer   ', 'Basic abc', 'Bearerx', ' Bearer x'])(
    'counts %j as none',
    (header) => {
      expect(presentsKey(header)).toBe(false);
    },
  );
});
