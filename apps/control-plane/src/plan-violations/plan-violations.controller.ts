import type { Request as ExpressRequest } from 'express';
import { Controller, Get, Path, Query, Request, Response, Route, Security, Tags } from '@tsoa/runtime';
import { principalOf } from '../auth/principal';
import type { Problem } from '../http/problem';
import type { PlanViolationsAnswer } from './plan-violations.dto';
import type { PlanViolationsService } from './plan-violations.service';

/** A tracking plan's violations over time, as ingestion counted them (docs/tracking-plans.md). */
@Route('api/v1/tracking-plans')
@Tags('Tracking plans')
// The headers inline: tsoa documents each property of a type literal as a header.
@Response<Problem, { 'Retry-After': string; RateLimit: string; 'RateLimit-Policy': string }>(
  429,
  'rate_limited: the key made more than API_RATE_LIMIT_PER_MINUTE requests this minute. Retry-After: seconds to wait; RateLimit (IETF draft 8): `"600-in-1min"; r=<remaining>; t=<seconds to reset>`, also on every answer',
)
@Response<Problem>(
  400,
  'validation_failed: a query value is not valid (errors[] names it: query.since, query.until, query.granularity, query.groupBy, query.samples, query.version)',
)
@Response<Problem>(401, 'Missing or invalid API key')
@Response<Problem>(403, 'The API key lacks the required scope')
@Response<Problem>(404, 'not_found: no such plan in this account')
@Response<Problem>(
  503,
  'violations_unavailable: the control plane has no Redis (REDIS_URL) or cannot reach it',
)
export class PlanViolationsController extends Controller {
  constructor(private readonly violations: PlanViolationsService) {
    super();
  }

  /**
   * The plan's violations in a window, summed per group with a count per bucket, and each
   * group's newest samples (docs/tracking-plans.md, "Violations over time"). Groups are sorted
   * by total, largest first, at most 200 (`groupsLeftOff` says how many more there were).
   * @param since The window's start (ISO 8601 with a zone; default: 24 hours before `until`).
   * @param until The window's end, exclusive (default: now).
   * @param granularity `minute` (windows up to 24 hours; the default for them) or `hour` (up to 32 days).
   * @param groupBy A comma list of `event`, `code`, `path`, `version`, `writeKey` (default `event,code,path`).
   * @param writeKeyId Only this write key's events.
   * @param event Only events of this name (track: the event; page and screen: the name), or of this type for events without one.
   * @param code Only this violation code (`missing_required`, `type_mismatch`, ...).
   * @param version Only events held to this plan version.
   * @param samples Samples per group, 0-5 (default 3).
   * @isInt version
   * @isInt samples
   */
  @Get('{planId}/violations')
  @Security('api_key', ['tracking_plans.read'])
  async getTrackingPlanViolations(
    @Request() request: ExpressRequest,
    @Path() planId: string,
    @Query() since?: string,
    @Query() until?: string,
    @Query() granularity?: string,
    @Query() groupBy?: string,
    @Query() writeKeyId?: string,
    @Query() event?: string,
    @Query() code?: string,
    @Query() version?: number,
    @Query() samples?: number,
  ): Promise<PlanViolationsAnswer> {
    const data = await this.violations.violations(principalOf(request).accountId, planId, {
      ...(since !== undefined ? { since } : {}),
      ...(until !== undefined ? { until } : {}),
      ...(granularity !== undefined ? { granularity } : {}),
      ...(groupBy !== undefined ? { groupBy } : {}),
      ...(writeKeyId !== undefined ? { writeKeyId } : {}),
      ...(event !== undefined ? { event } : {}),
      ...(code !== undefined ? { code } : {}),
      ...(version !== undefined ? { version } : {}),
      ...(samples !== undefined ? { samples } : {}),
    });
    return { data };
  }
}
