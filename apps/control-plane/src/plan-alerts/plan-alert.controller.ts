import type { Request as ExpressRequest } from 'express';
import {
  Body,
  Controller,
  Delete,
  Get,
  Path,
  Put,
  Request,
  Response,
  Route,
  Security,
  SuccessResponse,
  Tags,
} from '@tsoa/runtime';
import { principalOf } from '../auth/principal';
import type { Problem } from '../http/problem';
import type { PlanAlertAnswer, PutPlanAlertBody } from './plan-alert.dto';
import type { PlanAlertService } from './plan-alert.service';

/**
 * A tracking plan's violation alert (docs/tracking-plans.md, "Alerts"): each window's counts,
 * one `Violation Generated` track event per event, code and path, POSTed signed to a webhook.
 */
@Route('api/v1/tracking-plans/{planId}/alert')
@Tags('Tracking plans')
@Response<Problem, { 'Retry-After': string; RateLimit: string; 'RateLimit-Policy': string }>(
  429,
  'rate_limited: the key made more than API_RATE_LIMIT_PER_MINUTE requests this minute. Retry-After: seconds to wait; RateLimit (IETF draft 8): `"600-in-1min"; r=<remaining>; t=<seconds to reset>`, also on every answer',
)
@Response<Problem>(401, 'Missing or invalid API key')
@Response<Problem>(403, 'The API key lacks the required scope')
@Response<Problem>(
  404,
  'not_found: no such plan in this account (another account’s included), or the plan has no alert',
)
export class PlanAlertController extends Controller {
  constructor(private readonly alerts: PlanAlertService) {
    super();
  }

  /** The plan's alert and how its sending goes (last window sent, last error, counts sent). */
  @Get()
  @Security('api_key', ['tracking_plans.read'])
  async getPlanAlert(@Request() request: ExpressRequest, @Path() planId: string): Promise<PlanAlertAnswer> {
    return { data: await this.alerts.get(principalOf(request).accountId, planId) };
  }

  /**
   * Creates or replaces the plan's alert. A new alert, a new `windowMinutes` or enabling a
   * disabled alert starts at the window under way. The signing secret is never answered.
   */
  @Put()
  @Security('api_key', ['tracking_plans.write'])
  @Response<Problem>(
    400,
    'validation_failed: a value of the wrong shape, a windowMinutes not in the list, or no signingSecret for a new alert (named in errors[])',
  )
  @Response<Problem>(
    422,
    'url_not_allowed: the url is not a public http(s) host (loopback, private and other internal addresses are refused); secret_required_for_new_host: the url moves to another origin without a new signingSecret',
  )
  async putPlanAlert(
    @Request() request: ExpressRequest,
    @Path() planId: string,
    @Body() body: PutPlanAlertBody,
  ): Promise<PlanAlertAnswer> {
    return { data: await this.alerts.put(principalOf(request).accountId, planId, body) };
  }

  /** Removes the plan's alert; windows not yet sent are not sent. */
  @Delete()
  @Security('api_key', ['tracking_plans.write'])
  @SuccessResponse(204, 'Deleted')
  async deletePlanAlert(@Request() request: ExpressRequest, @Path() planId: string): Promise<void> {
    await this.alerts.remove(principalOf(request).accountId, planId);
    this.setStatus(204);
  }
}
