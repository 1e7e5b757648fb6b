import { consentAllows } from './consent';

describe('consentAllows per category', () => {
  it('withholds advertising when marketing is denied, and only then', () => {
    expect(consentAllows('advertising', { marketing: false })).toBe(false);
    expect(consentAllows('advertising', { analytics: false, marketing: true })).toBe(true);
  });

  it('never gates the warehouse or webhooks, whatever keys the consent object has', () => {
    const odd = { null: false, '': false, analytics: false, marketing: false };
    expect(consentAllows('warehouse', odd)).toBe(true);
    expect(consentAllows('webhook', odd)).toBe(true);
  });
});
