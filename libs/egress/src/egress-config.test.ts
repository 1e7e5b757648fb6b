import { egressConfigSchema } from './egress-config';

describe('egressConfigSchema', () => {
  it('allows public addresses only unless ranges are given', () => {
    expect(egressConfigSchema.parse({})).toEqual({ EGRESS_ALLOW_PRIVATE_RANGES: [] });
    expect(egressConfigSchema.parse({ EGRESS_ALLOW_PRIVATE_RANGES: '' })).toEqual({
      EGRESS_ALLOW_PRIVATE_RANGES: [],
    });
    expect(egressConfigSchema.parse({ EGRESS_ALLOW_PRIVATE_RANGES: ' , ,' })).toEqual({
      EGRESS_ALLOW_PRIVATE_RANGES: [],
    });
  });

  it('reads comma-separated CIDR ranges, trimmed, skipping empty items', () => {
    expect(
      egressConfigSchema.parse({ EGRESS_ALLOW_PRIVATE_RANGES: ' 10.20.0.0/16 ,fd00:1::/64,,192.168.1.0/24' }),
    ).toEqual({ EGRESS_ALLOW_PRIVATE_RANGES: ['10.20.0.0/16', 'fd00:1::/64', '192.168.1.0/24'] });
  });

  it('refuses an entry that is not a CIDR range, naming it', () => {
    for (const value of ['10.0.0.0', '10.20.0.0/16,intranet', '10.0.0.0/33']) {
      const result = egressConfigSchema.safeParse({ EGRESS_ALLOW_PRIVATE_RANGES: value });
      expect(result.success).toBe(false);
      const entry = value.split(',').pop();
      expect(result.error?.issues.map((issue) => [issue.code, issue.message, issue.path])).toEqual([
        [
          'custom',
          `"${entry}" is not a CIDR range such as 10.0.0.0/8 or fd00::/8`,
          ['EGRESS_ALLOW_PRIVATE_RANGES'],
        ],
      ]);
    }
  });

  it('describes the setting for the generated configuration reference', () => {
    expect(egressConfigSchema.shape.EGRESS_ALLOW_PRIVATE_RANGES.description).toMatch(
      /^Comma-separated CIDR ranges/,
    );
  });
});
