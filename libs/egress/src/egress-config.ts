import { z } from 'zod';
import { parseAllowedRanges } from './address-policy';

/**
 * EGRESS_ALLOW_PRIVATE_RANGES: comma-separated CIDR ranges tenant-supplied URLs may reach
 * although they are not public (a self-hosted deployment whose webhooks live on its own
 * network). Empty by default: only public addresses.
 */
export const egressConfigSchema = z.object({
  EGRESS_ALLOW_PRIVATE_RANGES: z
    .string()
    .default('')
    .transform((value, ctx) => {
      const ranges = value
        .split(',')
        .map((item) => item.trim())
        .filter(Boolean);
      try {
        parseAllowedRanges(ranges);
      } catch (error) {
        ctx.addIssue({ code: 'custom', message: (error as Error).message });
        return z.NEVER;
      }
      return ranges;
    }),
});

export type EgressConfig = z.infer<typeof egressConfigSchema>;
