import { ControlPlaneUnavailable, lookupOutcome, tenantOfAnswer } from './control-plane-answer';

describe('lookupOutcome', () => {
  it('reads each status of a tenant lookup', () => {
    const statuses = [
      200, 201, 204, 299, 300, 304, 399, 400, 401, 402, 403, 404, 413, 422, 499, 500, 502, 503, 199,
    ];
    expect(statuses.map((status) => [status, lookupOutcome(status)])).toEqual([
      [200, 'tenant'],
      [201, 'tenant'],
      [204, 'tenant'],
      [299, 'tenant'],
      [300, 'unavailable'],
      [304, 'unavailable'],
      [399, 'unavailable'],
      [400, 'unknown'],
      [401, 'token_refused'],
      [402, 'unknown'],
      [403, 'token_refused'],
      [404, 'unknown'],
      [413, 'unknown'],
      [422, 'unknown'],
      [499, 'unknown'],
      [500, 'unavailable'],
      [502, 'unavailable'],
      [503, 'unavailable'],
      [199, 'unavailable'],
    ]);
  });
});

describe('tenantOfAnswer', () => {
  it('returns the tenant the body holds', () => {
    const tenant = { accountId: 'acc_1', writeKeyId: 'wk_1', destinations: [] };
    expect(tenantOfAnswer({ data: tenant })).toBe(tenant);
    expect(tenantOfAnswer({ data: { accountId: '' } })).toEqual({ accountId: '' });
  });

  it.each([
    ['no body', null, 'the control plane answered without a tenant'],
    ['a body that is not an object', 'text', 'the control plane answered without a tenant'],
    ['no data', { tenant: { accountId: 'acc_1' } }, 'the control plane answered without a tenant'],
    ['null data', { data: null }, 'the control plane answered without a tenant'],
    ['a string as data', { data: 'acc_1' }, 'the control plane answered without a tenant'],
    ['a list as data', { data: [{ accountId: 'acc_1' }] }, 'the control plane answered without a tenant'],
    [
      'a tenant without its account',
      { data: { writeKeyId: 'wk_1' } },
      'the control plane answered a tenant without its account',
    ],
    [
      'an account that is not text',
      { data: { accountId: 7 } },
      'the control plane answered a tenant without its account',
    ],
  ])('refuses %s as unavailable', (_what, body, message) => {
    let thrown: unknown;
    try {
      tenantOfAnswer(body);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(ControlPlaneUnavailable);
    expect((thrown as Error).message).toBe(message);
  });
});
