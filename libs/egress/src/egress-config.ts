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
    })
    .describe(
      'Comma-separated CIDR ranges (`10.20.0.0/16,fd00:1::/64`) that tenant-supplied URLs (webhooks, vendor hosts) may reach although they are not public. Empty: public addresses only (SECURITY.md, "Outbound requests").',
    ),
});

export type EgressConfig = z.infer<typeof egressConfigSchema>;
