import type { Request as ExpressRequest } from 'express';
import { Controller, Path, Post, Request, Response, Route, Security, Tags } from '@tsoa/runtime';
import { principalOf } from '../auth/principal';
import type { Problem } from '../http/problem';
import type { PrecheckResult } from './task.dto';
import type { TaskService } from './task.service';

/** Templates (agent goals): `connector_health_audit`, `warehouse_freshness_check`, `tracking_plan_audit`. */
@Route('api/v1/templates')
@Tags('Tasks and templates')
@Response<Problem>(401, 'Missing or invalid API key')
// The headers inline: tsoa documents each property of a type literal as a header.
@Response<Problem, { 'Retry-After': string; RateLimit: string; 'RateLimit-Policy': string }>(
  429,
  'rate_limited: the key made more than API_RATE_LIMIT_PER_MINUTE requests this minute. Retry-After: seconds to wait; RateLimit (IETF draft 8): `"600-in-1min"; r=<remaining>; t=<seconds to reset>`, also on every answer',
)
@Response<Problem>(403, 'insufficient_scope, or feature_not_enabled (the Automations feature is off)')
export class TemplatesController extends Controller {
  constructor(private readonly tasks: TaskService) {
    super();
  }

  /**
   * Checks the template's prerequisites against the account's current state: `ready` when
   * nothing is missing, else one gap per missing capability: `missing_integration` (no
   * connected app of `capability.appType`), `missing_permission` (the calling key lacks the
   * scope `capability.name`) or `missing_data` (`capability.name` names the data), each with a
   * hint. No body.
   */
  @Post('{templateId}/precheck')
  @Security('api_key', ['tasks.read'])
  @Response<Problem>(404, 'No such template')
  @Response<Problem, { 'Retry-After': string }>(
    503,
    'warehouse_unavailable: the warehouse cannot be reached (missing database, refused connection, failed authentication) to check the `missing_data` prerequisites. Retry-After: seconds to wait',
  )
  async precheckTemplate(
    @Request() request: ExpressRequest,
    @Path() templateId: string,
  ): Promise<{ data: PrecheckResult }> {
    return { data: await this.tasks.precheck(principalOf(request), templateId) };
  }
}
