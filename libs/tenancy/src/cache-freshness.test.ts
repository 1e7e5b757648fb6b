import { UNSUBSCRIBED_MAX_TTL_MS, usableCacheEntry } from './cache-freshness';

describe('usableCacheEntry', () => {
  const entry = { storedAt: 1_000, expiresAt: 1_000 + 60_000 };

  it('is usable before its TTL and not from the moment it expires, while changes are heard', () => {
    expect(usableCacheEntry(entry, 1_000, true)).toBe(true);
    expect(usableCacheEntry(entry, 60_999, true)).toBe(true);
    expect(usableCacheEntry(entry, 61_000, true)).toBe(false);
    expect(usableCacheEntry(entry, 61_001, true)).toBe(false);
  });

  it('while no change would be heard, is usable for UNSUBSCRIBED_MAX_TTL_MS after it was stored', () => {
    expect(UNSUBSCRIBED_MAX_TTL_MS).toBe(10_000);
    expect(usableCacheEntry(entry, 1_000, false)).toBe(true);
    expect(usableCacheEntry(entry, 1_000 + UNSUBSCRIBED_MAX_TTL_MS - 1, false)).toBe(true);
    expect(usableCacheEntry(entry, 1_000 + UNSUBSCRIBED_MAX_TTL_MS, false)).toBe(false);
  });

  it('never outlives its TTL, even while changes are not heard', () => {
    const short = { storedAt: 1_000, expiresAt: 2_000 };
    expect(usableCacheEntry(short, 1_999, false)).toBe(true);
    expect(usableCacheEntry(short, 2_000, false)).toBe(false);
  });
});
