import { parseTenantChange, TENANT_CHANGES_CHANNEL } from './tenant-change-message';

describe('parseTenantChange', () => {
  it('is heard on the one channel every version of every service shares', () => {
    expect(TENANT_CHANGES_CHANNEL).toBe('pipeline:tenant-changes:v1');
  });

  it('reads a revocation and an account change', () => {
    expect(parseTenantChange('{"kind":"write_key_revoked","accountId":"acc_1","writeKeyId":"wk_1"}')).toEqual(
      {
        kind: 'write_key_revoked',
        accountId: 'acc_1',
        writeKeyId: 'wk_1',
      },
    );
    expect(parseTenantChange('{"kind":"tenant_changed","accountId":"acc_2"}')).toEqual({
      kind: 'tenant_changed',
      accountId: 'acc_2',
    });
  });

  it.each([
    ['not JSON', '{kind'],
    ['JSON null', 'null'],
    ['a number', '5'],
    ['an unknown kind', '{"kind":"resync","accountId":"acc_1","writeKeyId":"wk_1"}'],
    ['no kind', '{"accountId":"acc_1","writeKeyId":"wk_1"}'],
    ['a revocation without its key', '{"kind":"write_key_revoked","accountId":"acc_1"}'],
    [
      'a revocation with a key that is not text',
      '{"kind":"write_key_revoked","accountId":"acc_1","writeKeyId":1}',
    ],
    ['a revocation without its account', '{"kind":"write_key_revoked","writeKeyId":"wk_1"}'],
    ['an account change without its account', '{"kind":"tenant_changed"}'],
    ['an account change with an account that is not text', '{"kind":"tenant_changed","accountId":["acc_1"]}'],
  ])('ignores %s', (_what, message) => {
    expect(parseTenantChange(message)).toBeNull();
  });
});
