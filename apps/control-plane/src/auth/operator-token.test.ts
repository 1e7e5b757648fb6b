import { OperatorToken } from './operator-token';

const TOKEN = 'o'.repeat(20) + 'p'.repeat(20);

const refusal = (operator: OperatorToken, authorization: string | undefined) => {
  try {
    operator.authenticate(authorization);
    return null;
  } catch (error) {
    const { status, code, message } = error as { status: number; code: string; message: string };
    return { status, code, message };
  }
};

describe('OperatorToken', () => {
  it('answers 404 not_found for every request while OPERATOR_API_TOKEN is unset', () => {
    for (const operator of [new OperatorToken(undefined), new OperatorToken('')])
      for (const header of [undefined, '', `Bearer ${TOKEN}`, 'Bearer '])
        expect(refusal(operator, header)).toEqual({
          status: 404,
          code: 'not_found',
          message: 'The operator API is not enabled',
        });
  });

  it('is enabled only with a token, and matches nothing while unset', () => {
    expect(new OperatorToken(TOKEN).enabled).toBe(true);
    for (const operator of [new OperatorToken(undefined), new OperatorToken('')]) {
      expect(operator.enabled).toBe(false);
      // No digest to compare with: false, never a throw from comparing against nothing.
      for (const header of [undefined, `Bearer ${TOKEN}`, 'Bearer x'])
        expect(operator.matches(header)).toBe(false);
    }
  });

  it('matches its token only, as a bearer token', () => {
    const operator = new OperatorToken(TOKEN);
    expect(operator.matches(`Bearer ${TOKEN}`)).toBe(true);
    expect(operator.matches(`Bearer ${TOKEN}x`)).toBe(false);
    expect(operator.matches(undefined)).toBe(false);
  });

  it('accepts its token as a bearer token, in any case of the scheme', () => {
    const operator = new OperatorToken(TOKEN);
    for (const header of [`Bearer ${TOKEN}`, `bearer ${TOKEN}`, `BEARER   ${TOKEN}  `])
      expect(operator.authenticate(header)).toEqual({ service: 'operator' });
  });

  it('refuses anything else with 401 invalid_operator_token', () => {
    const operator = new OperatorToken(TOKEN);
    for (const header of [
      undefined,
      '',
      TOKEN,
      `Basic ${TOKEN}`,
      `Bearer ${TOKEN}x`,
      `Bearer ${TOKEN.slice(1)}`,
      `Bearer ${TOKEN.toUpperCase()}`,
      `Bearer ${TOKEN} extra`,
      // The scheme opens the header: a Bearer later in it is a token of another scheme.
      `xBearer ${TOKEN}`,
      `Basic Bearer ${TOKEN}`,
    ])
      expect(refusal(operator, header)).toEqual({
        status: 401,
        code: 'invalid_operator_token',
        message: 'This endpoint needs the operator token',
      });
  });
});
