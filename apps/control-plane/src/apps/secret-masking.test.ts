import { keepMaskedSecrets, maskAll, maskSecretFields, MASK } from './secret-masking';

// What the API answers for an app's credentials and for settings that may hold secrets, and how
// a masked value sent back keeps the stored one. Pure: apps.test.ts covers the API.

describe('maskAll', () => {
  it('masks every credential value, whatever its type, and keeps the field names', () => {
    expect(
      maskAll({ apiKey: 'sk_live_1', siteId: 'cio-site', retries: 3, nested: { a: 1 }, none: null }),
    ).toEqual({
      apiKey: MASK,
      siteId: MASK,
      retries: MASK,
      nested: MASK,
      none: MASK,
    });
    expect(maskAll({})).toEqual({});
  });

  it('masks with ten asterisks', () => {
    expect(MASK).toBe('**********');
  });
});

describe('maskSecretFields', () => {
  it.each([
    'secret',
    'clientSecret',
    'SIGNING_SECRET',
    'password',
    'dbPassword',
    'passwd',
    'token',
    'accessToken',
    'refresh_token',
    'apikey',
    'apiKey',
    'api_key',
    'api-key',
    'X-API-KEY',
    'private',
    'privateKey',
    'credential',
    'credentials',
    'auth',
    'authorization',
    'basicAuth',
  ])('masks the value of %s', (key) => {
    expect(maskSecretFields({ [key]: 'value-1', name: 'shown' })).toEqual({ [key]: MASK, name: 'shown' });
  });

  it.each(['url', 'endpoint', 'api', 'key', 'apiVersion', 'region', 'pass', 'secre', 'tok', 'privat'])(
    'keeps the value of %s',
    (key) => {
      expect(maskSecretFields({ [key]: 'value-1' })).toEqual({ [key]: 'value-1' });
    },
  );

  it('masks a secret-looking key whatever its value, except null', () => {
    expect(
      maskSecretFields({
        token: { value: 'x' },
        secret: ['a', 'b'],
        password: 42,
        apiKey: '',
        auth: false,
        credential: null,
      }),
    ).toEqual({ token: MASK, secret: MASK, password: MASK, apiKey: MASK, auth: MASK, credential: null });
  });

  it('masks at any depth, through objects and arrays', () => {
    expect(
      maskSecretFields({
        global: { url: 'https://hooks.example.com', headers: { authorization: 'Bearer abc' } },
        tasks: [{ task_type: 'events', secretKey: 'sk_1' }, 'plain', 7, null, [{ password: 'p' }]],
      }),
    ).toEqual({
      global: { url: 'https://hooks.example.com', headers: { authorization: MASK } },
      tasks: [{ task_type: 'events', secretKey: MASK }, 'plain', 7, null, [{ password: MASK }]],
    });
  });

  it('answers scalars, null and empty containers unchanged', () => {
    expect(maskSecretFields('token')).toBe('token');
    expect(maskSecretFields(3)).toBe(3);
    expect(maskSecretFields(null)).toBeNull();
    expect(maskSecretFields(undefined)).toBeUndefined();
    expect(maskSecretFields([])).toEqual([]);
    expect(maskSecretFields({})).toEqual({});
  });

  it('does not change the value it was given', () => {
    const config = { nested: { token: 't' } };
    maskSecretFields(config);
    expect(config).toEqual({ nested: { token: 't' } });
  });
});

describe('keepMaskedSecrets', () => {
  it('keeps the stored secret where the mask comes back under a secret-looking key', () => {
    expect(
      keepMaskedSecrets(
        { token: MASK, url: 'https://b.example.com', headers: { authorization: MASK } },
        { token: 'stored-token', url: 'https://a.example.com', headers: { authorization: 'Bearer s' } },
      ),
    ).toEqual({
      token: 'stored-token',
      url: 'https://b.example.com',
      headers: { authorization: 'Bearer s' },
    });
  });

  it('takes a new secret, and stores the mask itself under a key that is not secret-looking', () => {
    expect(keepMaskedSecrets({ token: 'new', label: MASK }, { token: 'old', label: 'stored' })).toEqual({
      token: 'new',
      label: MASK,
    });
  });

  it('keeps the mask when nothing was stored under that key', () => {
    expect(keepMaskedSecrets({ token: MASK }, { other: 'x' })).toEqual({ token: MASK });
    expect(keepMaskedSecrets({ token: MASK }, null)).toEqual({ token: MASK });
    expect(keepMaskedSecrets({ token: MASK }, 'stored')).toEqual({ token: MASK });
    expect(keepMaskedSecrets({ token: MASK }, ['stored'])).toEqual({ token: MASK });
    expect(keepMaskedSecrets({ token: MASK }, undefined)).toEqual({ token: MASK });
  });

  it('keeps a stored null or empty secret rather than storing the mask', () => {
    expect(keepMaskedSecrets({ token: MASK }, { token: null })).toEqual({ token: null });
    expect(keepMaskedSecrets({ token: MASK }, { token: '' })).toEqual({ token: '' });
  });

  it('matches array items by index, and objects inside them by key', () => {
    expect(
      keepMaskedSecrets(
        [{ secret: MASK }, { secret: MASK, name: 'b' }, { secret: MASK }],
        [{ secret: 's0' }, { secret: 's1', name: 'a' }],
      ),
    ).toEqual([{ secret: 's0' }, { secret: 's1', name: 'b' }, { secret: MASK }]);
    expect(keepMaskedSecrets({ tasks: [{ apiKey: MASK }] }, { tasks: [{ apiKey: 'k' }] })).toEqual({
      tasks: [{ apiKey: 'k' }],
    });
    // A stored object is not an array: its keys do not stand for indexes.
    expect(keepMaskedSecrets([{ secret: MASK }], { 0: { secret: 's' } })).toEqual([{ secret: MASK }]);
  });

  it('answers scalars and null unchanged', () => {
    expect(keepMaskedSecrets(MASK, 'stored')).toBe(MASK);
    expect(keepMaskedSecrets(null, { a: 1 })).toBeNull();
    expect(keepMaskedSecrets(5, 6)).toBe(5);
    expect(keepMaskedSecrets({}, { token: 's' })).toEqual({});
  });
});
