import { isPlausibleWriteKey, MAX_WRITE_KEY_LENGTH } from './tenant-record';

describe('isPlausibleWriteKey', () => {
  it('takes 1 to 200 visible ASCII characters, nothing else', () => {
    expect(MAX_WRITE_KEY_LENGTH).toBe(200);
    expect(isPlausibleWriteKey('wk_abc-DEF_123')).toBe(true);
    expect(isPlausibleWriteKey('x')).toBe(true);
    expect(isPlausibleWriteKey('!~')).toBe(true);
    expect(isPlausibleWriteKey('x'.repeat(MAX_WRITE_KEY_LENGTH))).toBe(true);
    expect(isPlausibleWriteKey('x'.repeat(MAX_WRITE_KEY_LENGTH + 1))).toBe(false);
    expect(isPlausibleWriteKey('')).toBe(false);
    expect(isPlausibleWriteKey('wk ab')).toBe(false);
    expect(isPlausibleWriteKey(' wk_ab')).toBe(false);
    expect(isPlausibleWriteKey('wk_ab ')).toBe(false);
    expect(isPlausibleWriteKey('wk_\u00e9')).toBe(false);
    expect(isPlausibleWriteKey('wk_\n')).toBe(false);
    expect(isPlausibleWriteKey('wk_\x7f')).toBe(false);
  });
});
