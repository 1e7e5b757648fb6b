import { MAX_STORAGE_BYTES, saneStorageBytes } from './storage-bytes';

// A storage figure comes from a server the account may own: whatever it answers, the figure
// metered is whole bytes in [0, MAX_STORAGE_BYTES] (security review 2026-11-29, finding 5).
describe('saneStorageBytes', () => {
  it.each([
    ['123', 123],
    [123, 123],
    ['1234.9', 1234],
    [0, 0],
    ['0', 0],
    // Zero, not negative zero: a figure times a price must not print as -0.
    [-0, 0],
    ['-0', 0],
    ['0.5', 0],
    [10n, 10],
    [{ valueOf: () => 7 }, 7],
    [null, 0],
    [undefined, 0],
    ['-1000000000000000', 0],
    [-1, 0],
    [-0.5, 0],
    ['NaN', 0],
    ['not a number', 0],
    [Number.POSITIVE_INFINITY, 0],
    [Number.NEGATIVE_INFINITY, 0],
    ['1e400', 0],
    [String(2 ** 50), 2 ** 50],
    [String(2 ** 50 + 1), 2 ** 50],
    ['99999999999999999999999', 2 ** 50],
  ])('takes %j as %d', (answered, expected) => {
    expect(saneStorageBytes(answered)).toBe(expected);
  });

  it('caps at 1 PiB', () => {
    expect(MAX_STORAGE_BYTES).toBe(1_125_899_906_842_624);
  });
});
