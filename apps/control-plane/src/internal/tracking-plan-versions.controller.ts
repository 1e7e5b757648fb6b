import { Body, Controller, Hidden, Post, Response, Route, Security, Tags } from '@tsoa/runtime';
import type { Problem } from '../http/problem';
import type {
  TrackingPlanVersionQuery,
  TrackingPlanVersionRecord,
} from '../tracking-plans/tracking-plan.dto';
import type { TrackingPlanService } from '../tracking-plans/tracking-plan.service';

/**
 * Internal: the published plan version a key's tenant record names, for ingestion to compile.
 * A version never changes, so ingestion caches it for good; the account is part of the question
 * so that a plan id from one tenant's record never opens another's plan.
 */
@Hidden()
@Route('internal/v1/tracking-plan-versions')
@Tags('Internal')
export class TrackingPlanVersionsController extends Controller {
  constructor(private readonly plans: TrackingPlanService) {
    super();
  }

  @Post()
  @Security('internal_token', ['tracking_plans.versions'])
  @Response<Problem>(401, 'invalid_service_token')
  @Response<Problem>(404, 'tracking_plan_version_not_found')
  async trackingPlanVersion(
    @Body() body: TrackingPlanVersionQuery,
  ): Promise<{ data: TrackingPlanVersionRecord }> {
    return { data: await this.plans.versionRecord(body.accountId, body.planId, body.version) };
  }
}
