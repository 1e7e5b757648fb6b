import fc from 'fast-check';
import { warehouseSchemaFor } from './warehouse-location';

describe('warehouseSchemaFor', () => {
  it('names an account’s schema by its id, without dashes, in lower case', () => {
    expect(warehouseSchemaFor('6f9619ff-8b86-d011-b42d-00c04fc964ff')).toBe(
      'account_6f9619ff8b86d011b42d00c04fc964ff',
    );
    expect(warehouseSchemaFor('6F9619FF-8B86-D011-B42D-00C04FC964FF')).toBe(
      'account_6f9619ff8b86d011b42d00c04fc964ff',
    );
  });

  it('gives every account id a name that is a plain SQL identifier: no quoting needed, within 63 bytes', () => {
    fc.assert(
      fc.property(fc.uuid(), (accountId) => {
        const schema = warehouseSchemaFor(accountId);
        expect(schema).toMatch(/^account_[0-9a-f]{32}$/);
        expect(schema.length).toBeLessThanOrEqual(63);
        expect(warehouseSchemaFor(accountId.toUpperCase())).toBe(schema);
      }),
    );
  });

  it('never gives two accounts one schema', () => {
    fc.assert(
      fc.property(fc.uuid(), fc.uuid(), (a, b) => {
        fc.pre(a.toLowerCase() !== b.toLowerCase());
        expect(warehouseSchemaFor(a)).not.toBe(warehouseSchemaFor(b));
      }),
    );
  });
});
