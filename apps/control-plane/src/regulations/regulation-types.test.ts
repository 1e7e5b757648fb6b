import { effectOf, isTerminal, monthOf, overallStatusOf, regulationTypes } from './regulation-types';

describe('regulation types', () => {
  it("give each of Segment's types its effect", () => {
    expect(regulationTypes.map((type) => [type, effectOf[type]])).toEqual([
      ['SUPPRESS_ONLY', { suppress: true, deletes: false, vendors: false }],
      ['SUPPRESS_WITH_DELETE', { suppress: true, deletes: true, vendors: true }],
      ['DELETE_ONLY', { suppress: null, deletes: true, vendors: true }],
      ['UNSUPPRESS', { suppress: false, deletes: false, vendors: false }],
      ['DELETE_INTERNAL', { suppress: null, deletes: true, vendors: false }],
      ['SUPPRESS_WITH_DELETE_INTERNAL', { suppress: true, deletes: true, vendors: false }],
    ]);
  });

  it('end a target at done, failed or not_supported only', () => {
    expect(['not_supported', 'done', 'failed'].every((s) => isTerminal(s as never))).toBe(true);
    expect(['waiting_fence', 'pending', 'running', 'forwarded'].some((s) => isTerminal(s as never))).toBe(
      false,
    );
  });

  it('finish a regulation by its targets, never failing it for a vendor that cannot delete', () => {
    expect(overallStatusOf([])).toBe('FINISHED');
    expect(overallStatusOf(['done', 'not_supported'])).toBe('FINISHED');
    expect(overallStatusOf(['not_supported'])).toBe('FINISHED');
    expect(overallStatusOf(['done', 'forwarded'])).toBe('RUNNING');
    expect(overallStatusOf(['failed', 'waiting_fence'])).toBe('RUNNING');
    expect(overallStatusOf(['done', 'failed', 'not_supported'])).toBe('PARTIAL_SUCCESS');
    expect(overallStatusOf(['failed', 'not_supported'])).toBe('FAILED');
    expect(overallStatusOf(['failed', 'failed'])).toBe('FAILED');
  });

  it('count the quota by calendar month in UTC', () => {
    expect(monthOf(new Date('2026-11-29T23:59:59.999Z'))).toEqual({
      start: new Date('2026-11-01T00:00:00.000Z'),
      end: new Date('2026-12-01T00:00:00.000Z'),
    });
    expect(monthOf(new Date('2026-12-31T12:00:00Z'))).toEqual({
      start: new Date('2026-12-01T00:00:00.000Z'),
      end: new Date('2027-01-01T00:00:00.000Z'),
    });
    expect(monthOf(new Date('2027-01-01T00:00:00.000Z')).start).toEqual(new Date('2027-01-01T00:00:00.000Z'));
  });
});
