import { OperatorToken } from './operator-token';

const TOKEN = 'o'.repeat(20) + 'p'.repeat(20);

const refusal = (operator: OperatorToken, authorization: string | undefined) => {
  try {
    operator.authenticate(authorization);
    return null;
  } catch (error) {
    const { status, code } = error as { status: number; code: string };
    return { status, code };
  }
};

describe('OperatorToken', () => {
  it('answers 404 not_found for every request while OPERATOR_API_TOKEN is unset', () => {
    for (const operator of [new OperatorToken(undefined), new OperatorToken('')])
      for (const header of [undefined, '', `Bearer ${TOKEN}`, 'Bearer '])
        expect(refusal(operator, header)).toEqual({ status: 404, code: 'not_found' });
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
    ])
      expect(refusal(operator, header)).toEqual({ status: 401, code: 'invalid_operator_token' });
  });
});
