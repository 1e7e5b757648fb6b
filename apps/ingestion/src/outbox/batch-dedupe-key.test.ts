import { createHash } from 'node:crypto';
import { batchDedupeId, batchDedupeKey, DEDUPE_WINDOW_SECONDS } from './batch-dedupe-key';

// A batch id that matched another account's batch would acknowledge that batch as a retry and
// publish nothing: its events would be lost. One that changed on a retry would publish twice.

const ACCOUNT_A = '0b6f7b8e-2a1c-4c55-9d0e-000000000001';
const ACCOUNT_B = '0b6f7b8e-2a1c-4c55-9d0e-000000000002';

describe('batchDedupeId', () => {
  it('is the first 32 hex digits of the SHA-256 of the account and the message ids as a JSON array', () => {
    const expected = createHash('sha256').update(`["${ACCOUNT_A}","m1","m2"]`).digest('hex').slice(0, 32);
    expect(batchDedupeId(ACCOUNT_A, ['m1', 'm2'])).toBe(expected);
    expect(batchDedupeId(ACCOUNT_A, ['m1', 'm2'])).toMatch(/^[0-9a-f]{32}$/);
  });

  it('is the same for the same account and messages (a retry)', () => {
    expect(batchDedupeId(ACCOUNT_A, ['m1', 'm2'])).toBe(batchDedupeId(ACCOUNT_A, ['m1', 'm2']));
  });

  it('differs between two accounts sending identical message ids', () => {
    expect(batchDedupeId(ACCOUNT_A, ['m1', 'm2'])).not.toBe(batchDedupeId(ACCOUNT_B, ['m1', 'm2']));
    expect(batchDedupeId(ACCOUNT_A, [])).not.toBe(batchDedupeId(ACCOUNT_B, []));
  });

  it('differs when a message is added, dropped or the order changes', () => {
    const ids = new Set([
      batchDedupeId(ACCOUNT_A, ['m1', 'm2']),
      batchDedupeId(ACCOUNT_A, ['m1', 'm2', 'm3']),
      batchDedupeId(ACCOUNT_A, ['m1']),
      batchDedupeId(ACCOUNT_A, ['m2', 'm1']),
      batchDedupeId(ACCOUNT_A, ['m1m2']),
    ]);
    expect(ids.size).toBe(5);
  });

  it('tells apart message ids that hold the characters a separator would be', () => {
    const ids = new Set([
      batchDedupeId(ACCOUNT_A, ['a\nb']),
      batchDedupeId(ACCOUNT_A, ['a', 'b']),
      batchDedupeId(ACCOUNT_A, ['a","b']),
      batchDedupeId(ACCOUNT_A, ['a,b']),
      batchDedupeId(`${ACCOUNT_A}\na`, ['b']),
    ]);
    expect(ids.size).toBe(5);
  });

  it('does not let an account id run into the first message id', () => {
    expect(batchDedupeId('acc', ['m1'])).not.toBe(batchDedupeId('accm1', []));
    expect(batchDedupeId('acc', ['m1'])).not.toBe(batchDedupeId('ac', ['cm1']));
  });
});

describe('batchDedupeKey', () => {
  it("is the batch id under the dedupe prefix and the write key's hash tag", () => {
    expect(batchDedupeKey('wk_1', '0123456789abcdef0123456789abcdef')).toBe(
      'dedupe:batch:{wk_1}:0123456789abcdef0123456789abcdef',
    );
  });

  it('gives the same batch id of two write keys two keys', () => {
    expect(batchDedupeKey('wk_a', 'b1')).not.toBe(batchDedupeKey('wk_b', 'b1'));
  });
});

describe('DEDUPE_WINDOW_SECONDS', () => {
  it('remembers a batch for 24 hours', () => {
    expect(DEDUPE_WINDOW_SECONDS).toBe(86_400);
  });
});
