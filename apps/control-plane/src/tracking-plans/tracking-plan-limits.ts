import { AppError } from '@pipeline/errors';
import { planCaps } from '@pipeline/tracking-plans';

/**
 * What one account may hold in tracking plans (docs/tracking-plans.md, "Caps per account").
 * One plan version is capped by the library (planCaps: 2,000 rules, 64 KiB a schema, 1 MiB a
 * plan); these cap how many an account keeps. Without the byte cap, 100 plans of 1,000 full-size
 * versions would be 100 GiB of one tenant's rows; 64 MiB is 64 full-size versions, or over a
 * thousand versions of a 50-event plan (about 40 KiB each).
 */
export interface TrackingPlanLimits {
  /** Plans one account holds. RudderStack's Growth tier: unlimited plans; its Free tier: 1. */
  plansPerAccount: number;
  /** Versions one plan keeps: every one stays readable (pinned keys and replays name them). */
  versionsPerPlan: number;
  /** Bytes (canonical JSON, UTF-8) of all the account's drafts and versions together. */
  bytesPerAccount: number;
}

export const defaultTrackingPlanLimits: TrackingPlanLimits = {
  plansPerAccount: 100,
  versionsPerPlan: 1_000,
  bytesPerAccount: 64 * planCaps.maxPlanBytes,
};

/** Characters of a plan's name and description. */
export const planNameMaxLength = 200;
export const planDescriptionMaxLength = 2_000;

export type TrackingPlanLimitName = 'tracking_plans' | 'tracking_plan_versions' | 'tracking_plan_bytes';

const refusals: Record<TrackingPlanLimitName, { code: string; detail: (maximum: number) => string }> = {
  tracking_plans: {
    code: 'tracking_plan_limit_reached',
    detail: (maximum) =>
      `This account holds its limit of ${maximum} tracking plans; delete one to create another`,
  },
  tracking_plan_versions: {
    code: 'tracking_plan_version_limit_reached',
    detail: (maximum) =>
      `This plan has its limit of ${maximum} published versions, which are kept for good; create a new plan (export the latest version and import it) to publish more`,
  },
  tracking_plan_bytes: {
    code: 'tracking_plan_storage_limit_reached',
    detail: (maximum) =>
      `This account's tracking plans (drafts and published versions) would pass ${maximum} bytes; delete a plan to make room`,
  },
};

/** 422 with a stable code per cap, and `limit { name, maximum }` as account limits carry it. */
export function trackingPlanLimitReached(name: TrackingPlanLimitName, maximum: number): AppError {
  const refusal = refusals[name];
  return new AppError(422, refusal.code, refusal.detail(maximum), { limit: { name, maximum } });
}
