import { mixpanelInsertId, segmentMessageId, ulidOf, uuidOf } from './dedupe-keys';

// The keys a vendor deduplicates on. A retry must carry the same key as the first attempt (or
// the vendor stores the event twice), and two events must never share one (or the vendor drops
// the second). Each tenant's events go to its own vendor project, under its own credentials.
// The expected values were computed outside Node (sha256sum, Python's uuid.uuid5).

describe('mixpanelInsertId', () => {
  it('is the messageId when Mixpanel takes it: 1 to 36 letters, digits and dashes', () => {
    expect(mixpanelInsertId('7c9e6679-7425-40de-944b-e07fc1f90ae7')).toBe(
      '7c9e6679-7425-40de-944b-e07fc1f90ae7',
    );
    expect(mixpanelInsertId('A')).toBe('A');
    expect(mixpanelInsertId('m'.repeat(36))).toBe('m'.repeat(36));
  });

  it('is 32 hex characters of the messageId’s SHA-256 otherwise', () => {
    expect(mixpanelInsertId('m'.repeat(37))).toBe('c7d0f7348324afd568b7d5174e593bff');
    expect(mixpanelInsertId('order:88231/1')).toBe('7db59c250fd4571e9b277e3776f4871e');
    expect(mixpanelInsertId('')).toBe('e3b0c44298fc1c149afbf4c8996fb924');
    expect(mixpanelInsertId('ok\nx')).toMatch(/^[0-9a-f]{32}$/);
    expect(mixpanelInsertId('x-1 ')).toMatch(/^[0-9a-f]{32}$/);
  });
});

describe('uuidOf', () => {
  it('is the messageId, lower-cased, when it is a UUID', () => {
    expect(uuidOf('7C9E6679-7425-40DE-944B-E07FC1F90AE7')).toBe('7c9e6679-7425-40de-944b-e07fc1f90ae7');
  });

  it('is a version 5 UUID of the messageId otherwise, the same on every retry', () => {
    expect(uuidOf('msg-000001')).toBe('091a85a0-1d27-51d5-a743-ee5fdf01d44e');
    expect(uuidOf('msg-000002')).not.toBe(uuidOf('msg-000001'));
    expect(uuidOf(' 7c9e6679-7425-40de-944b-e07fc1f90ae7')).toMatch(
      /^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
    );
    expect(uuidOf('7c9e6679-7425-40de-944b-e07fc1f90ae7x')).not.toBe('7c9e6679-7425-40de-944b-e07fc1f90ae7x');
  });
});

describe('ulidOf', () => {
  it('puts the event time in the first 10 characters and the messageId’s hash in the other 16', () => {
    expect(ulidOf('msg-1', 0)).toBe('0000000000786Y6Y9JX2RSEHQJ');
    expect(ulidOf('msg-1', 1_772_366_400_000)).toBe('01KJMMA2G0786Y6Y9JX2RSEHQJ');
    expect(ulidOf('msg-1', 1_772_366_400_000)).toMatch(/^[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(ulidOf('msg-2', 0).slice(10)).not.toBe(ulidOf('msg-1', 0).slice(10));
  });

  it('clamps times to what 48 bits hold, and drops fractions', () => {
    expect(ulidOf('m', -5).slice(0, 10)).toBe('0000000000');
    expect(ulidOf('m', 2 ** 48 + 10).slice(0, 10)).toBe('7ZZZZZZZZZ');
    expect(ulidOf('m', 31.9).slice(0, 10)).toBe('000000000Z');
    expect(ulidOf('m', 32).slice(0, 10)).toBe('0000000010');
  });
});

describe('segmentMessageId', () => {
  it('is the messageId under 100 characters, its SHA-256 hex from 100 on', () => {
    expect(segmentMessageId('m'.repeat(99))).toBe('m'.repeat(99));
    expect(segmentMessageId('m'.repeat(100))).toHaveLength(64);
    expect(segmentMessageId('m'.repeat(100))).toBe(
      'f6449b4f736925a0013c6cbeb5cc4129c77576761aa2f694cae0f55b1d43f5c9',
    );
  });
});
