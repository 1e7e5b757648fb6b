import { checkStreamTableName, warehouseSchemaOf, warehouseTableNames } from './warehouse-names';
import { meteredBytes } from './query-meter';

// The names spliced into warehouse SQL. An account reads only its own schema, and no name
// from input reaches the SQL unchecked. Pure: usage.test.ts reads a real warehouse.

const account = '5D1F2C3B-0000-4000-8000-00000000000A';

describe('warehouseSchemaOf', () => {
  it('is account_ and the account id in lower case without dashes', () => {
    expect(warehouseSchemaOf(account)).toBe('account_5d1f2c3b00004000800000000000000a');
    expect(warehouseSchemaOf('00000000-0000-0000-0000-000000000001')).toBe(
      'account_00000000000000000000000000000001',
    );
  });

  it.each([
    'not-a-uuid',
    '',
    '5d1f2c3b-0000-4000-8000-00000000000',
    '5d1f2c3b-0000-4000-8000-00000000000a1',
    '5d1f2c3b-0000-4000-8000-00000000000g',
    '5d1f2c3b-0000-4000-8000-0000000000"a',
    'x5d1f2c3b-0000-4000-8000-00000000000',
    `x-account_${'0'.repeat(32)}`,
  ])('refuses the account id %j', (id) => {
    expect(() => warehouseSchemaOf(id)).toThrow('invalid account id for a warehouse schema');
  });
});

describe('warehouseTableNames', () => {
  it('are the four tracking tables', () => {
    expect(warehouseTableNames).toEqual(['events', 'users', 'groups', 'aliases']);
  });
});

describe('stream tables', () => {
  it.each(['stripe_customers', 'hubspot_deals', 'a', `a${'b'.repeat(62)}`, 'x9_'])('takes %s', (name) => {
    expect(checkStreamTableName(name)).toBe(name);
  });

  it.each([
    '',
    '1stripe',
    '_x',
    'Stripe',
    'stripe-customers',
    'a"; DROP TABLE x; --',
    `a${'b'.repeat(63)}`,
    'x\ny',
    'x.y',
  ])('refuses %j', (name) => {
    expect(() => checkStreamTableName(name)).toThrow(`invalid stream table name ${name}`);
  });
});

describe('meteredBytes', () => {
  it('meters whole bytes, never negative', () => {
    expect([8192, 0, -8192, 1.5, 2.4, -0.4].map(meteredBytes)).toEqual([8192, 0, 0, 2, 2, 0]);
  });
});
