import type { Request as ExpressRequest } from 'express';
import {
  Body,
  Controller,
  Delete,
  Get,
  Patch,
  Path,
  Post,
  Put,
  Query,
  Request,
  Response,
  Route,
  Security,
  SuccessResponse,
  Tags,
} from '@tsoa/runtime';
import { principalOf } from '../auth/principal';
import { invalidField } from '../http/api-errors';
import { pageRequest, type ListResponse } from '../http/pagination';
import type { Problem } from '../http/problem';
import type {
  BindTrackingPlanBody,
  CreateTrackingPlanBody,
  GeneratedTrackingPlanAnswer,
  GenerateTrackingPlanBody,
  ImportTrackingPlanBody,
  PlanDocumentInput,
  SegmentExportAnswer,
  TrackingPlanAnswer,
  TrackingPlanBindingAnswer,
  TrackingPlanDiffAnswer,
  TrackingPlanPreviewAnswer,
  TrackingPlanSummary,
  PreviewTrackingPlanBody,
  TrackingPlanVersionAnswer,
  TrackingPlanVersionSummary,
  UpdateTrackingPlanBody,
} from './tracking-plan.dto';
import type { PlanFromTraffic } from './plan-from-traffic';
import type { TrackingPlanBindings } from './tracking-plan-bindings';
import type { TrackingPlanService } from './tracking-plan.service';

/** A version in a path: a whole number from 1; anything else names no version (404). */
function versionOf(raw: number): number {
  if (!Number.isInteger(raw) || raw < 1)
    throw invalidField('path.version', 'must be an integer of 1 or more');
  return raw;
}

const INVALID_PLAN =
  'invalid_tracking_plan: the plan is refused by its checks (errors[]: each problem with its code and a JSON Pointer into the plan: invalid_document, too_many_rules, plan_too_large, schema_too_large, schema_too_deep, ref_cycle, schema_invalid, ...); nothing was changed';
const STORAGE_LIMIT =
  "tracking_plan_storage_limit_reached: the account's drafts and versions would pass its byte cap (`limit`)";

/**
 * Tracking plans (docs/tracking-plans.md): a JSON Schema per event and a common schema, edited as
 * a draft and published as immutable versions that write keys bind.
 */
@Route('api/v1/tracking-plans')
@Tags('Tracking plans')
// The headers inline: tsoa documents each property of a type literal as a header.
@Response<Problem, { 'Retry-After': string; RateLimit: string; 'RateLimit-Policy': string }>(
  429,
  'rate_limited: the key made more than API_RATE_LIMIT_PER_MINUTE requests this minute. Retry-After: seconds to wait; RateLimit (IETF draft 8): `"600-in-1min"; r=<remaining>; t=<seconds to reset>`, also on every answer',
)
@Response<Problem>(400, 'validation_failed: a body or query value of the wrong shape (named in errors[])')
@Response<Problem>(401, 'Missing or invalid API key')
@Response<Problem>(403, 'The API key lacks the required scope')
export class TrackingPlansController extends Controller {
  constructor(
    private readonly plans: TrackingPlanService,
    private readonly traffic: PlanFromTraffic,
  ) {
    super();
  }

  /** Creates a plan with its first draft (no rules when `plan` is absent); nothing is published. */
  @Post()
  @Security('api_key', ['tracking_plans.write'])
  @SuccessResponse(201, 'Created')
  @Response<Problem>(
    422,
    `${INVALID_PLAN}; tracking_plan_limit_reached: the account holds its limit of plans (\`limit\`); ${STORAGE_LIMIT}`,
  )
  async createTrackingPlan(
    @Request() request: ExpressRequest,
    @Body() body: CreateTrackingPlanBody,
  ): Promise<TrackingPlanAnswer> {
    const data = await this.plans.create(principalOf(request).accountId, body);
    this.setStatus(201);
    return { data };
  }

  /**
   * Creates a plan whose draft is a Segment tracking plan's rules or a Rudder CLI project's
   * tracking plan (docs/tracking-plans.md, "Import and export"); nothing is published.
   */
  @Post('import')
  @Security('api_key', ['tracking_plans.write'])
  @SuccessResponse(201, 'Created')
  @Response<Problem>(
    422,
    `invalid_import: the content is not the format, or holds what has no equivalent here (errors[]: invalid_input or not_mappable, a JSON Pointer into the content); ${INVALID_PLAN}; tracking_plan_limit_reached; ${STORAGE_LIMIT}`,
  )
  async importTrackingPlan(
    @Request() request: ExpressRequest,
    @Body() body: ImportTrackingPlanBody,
  ): Promise<TrackingPlanAnswer> {
    const data = await this.plans.importPlan(principalOf(request).accountId, body);
    this.setStatus(201);
    return { data };
  }

  /**
   * Creates a plan whose draft is inferred from the last N days of the account's warehouse
   * (docs/tracking-plans.md, "Plans from traffic"): a rule per event name, types, required
   * members, enums of few values; members seen with several types are flagged and left untyped.
   * Nothing is published.
   */
  @Post('generate')
  @Security('api_key', ['tracking_plans.write'])
  @SuccessResponse(201, 'Created')
  @Response<Problem>(
    409,
    "warehouse_engine_unsupported: the account's warehouse is ClickHouse (plans from traffic read PostgreSQL warehouses)",
  )
  @Response<Problem>(
    422,
    `${INVALID_PLAN} (the inference passed a cap: fewer days or a lower maxEnumValues); tracking_plan_limit_reached; ${STORAGE_LIMIT}`,
  )
  @Response<Problem>(503, "warehouse_unavailable: the account's warehouse cannot be reached")
  async generateTrackingPlan(
    @Request() request: ExpressRequest,
    @Body() body: GenerateTrackingPlanBody,
  ): Promise<GeneratedTrackingPlanAnswer> {
    const data = await this.traffic.generate(principalOf(request).accountId, body);
    this.setStatus(201);
    return { data };
  }

  /**
   * Lists the account's plans, newest first, without their drafts.
   * @param limit Items per page, 1-100 (default 20).
   * @param offset Items to skip (default 0).
   * @isInt limit
   * @isInt offset
   */
  @Get()
  @Security('api_key', ['tracking_plans.read'])
  async listTrackingPlans(
    @Request() request: ExpressRequest,
    @Query() limit?: number,
    @Query() offset?: number,
  ): Promise<ListResponse<TrackingPlanSummary>> {
    return this.plans.list(principalOf(request).accountId, pageRequest(limit, offset));
  }

  /** One plan with its draft. */
  @Get('{planId}')
  @Security('api_key', ['tracking_plans.read'])
  @Response<Problem>(404, 'not_found: no such plan in this account')
  async getTrackingPlan(
    @Request() request: ExpressRequest,
    @Path() planId: string,
  ): Promise<TrackingPlanAnswer> {
    return { data: await this.plans.get(principalOf(request).accountId, planId) };
  }

  /** Renames a plan or changes its description; its draft and versions are unchanged. */
  @Patch('{planId}')
  @Security('api_key', ['tracking_plans.write'])
  @Response<Problem>(404, 'not_found')
  async updateTrackingPlan(
    @Request() request: ExpressRequest,
    @Path() planId: string,
    @Body() body: UpdateTrackingPlanBody,
  ): Promise<TrackingPlanAnswer> {
    return { data: await this.plans.update(principalOf(request).accountId, planId, body) };
  }

  /** Deletes a plan with its draft and every version. */
  @Delete('{planId}')
  @Security('api_key', ['tracking_plans.write'])
  @SuccessResponse(204, 'Deleted')
  @Response<Problem>(404, 'not_found')
  @Response<Problem>(409, 'tracking_plan_in_use: a write key binds it; unbind first')
  async deleteTrackingPlan(@Request() request: ExpressRequest, @Path() planId: string): Promise<void> {
    await this.plans.remove(principalOf(request).accountId, planId);
    this.setStatus(204);
  }

  /** Replaces the draft with a plan document (docs/tracking-plans.md, "The plan document"). */
  @Put('{planId}/draft')
  @Security('api_key', ['tracking_plans.write'])
  @Response<Problem>(404, 'not_found')
  @Response<Problem>(422, `${INVALID_PLAN}; ${STORAGE_LIMIT}`)
  async putTrackingPlanDraft(
    @Request() request: ExpressRequest,
    @Path() planId: string,
    @Body() body: PlanDocumentInput,
  ): Promise<TrackingPlanAnswer> {
    return { data: await this.plans.putDraft(principalOf(request).accountId, planId, body) };
  }

  /**
   * Publishes the draft as the next version (n+1), frozen with its content hash. Keys bound at
   * `latest` are held to it within 10 s.
   */
  @Post('{planId}/publish')
  @Security('api_key', ['tracking_plans.write'])
  @SuccessResponse(201, 'Published')
  @Response<Problem>(404, 'not_found')
  @Response<Problem>(409, 'draft_unchanged: the draft equals the latest version')
  @Response<Problem>(
    422,
    `tracking_plan_version_limit_reached: the plan holds its limit of versions (\`limit\`); ${STORAGE_LIMIT}`,
  )
  async publishTrackingPlan(
    @Request() request: ExpressRequest,
    @Path() planId: string,
  ): Promise<TrackingPlanVersionAnswer> {
    const principal = principalOf(request);
    const data = await this.plans.publish(principal.accountId, planId, principal.apiKeyId);
    this.setStatus(201);
    return { data };
  }

  /**
   * Lists the plan's published versions, newest first, without their documents.
   * @param limit Items per page, 1-100 (default 20).
   * @param offset Items to skip (default 0).
   * @isInt limit
   * @isInt offset
   */
  @Get('{planId}/versions')
  @Security('api_key', ['tracking_plans.read'])
  @Response<Problem>(404, 'not_found')
  async listTrackingPlanVersions(
    @Request() request: ExpressRequest,
    @Path() planId: string,
    @Query() limit?: number,
    @Query() offset?: number,
  ): Promise<ListResponse<TrackingPlanVersionSummary>> {
    return this.plans.versions(principalOf(request).accountId, planId, pageRequest(limit, offset));
  }

  /**
   * A published version: the plan exactly as published and its hash.
   * @isInt version
   */
  @Get('{planId}/versions/{version}')
  @Security('api_key', ['tracking_plans.read'])
  @Response<Problem>(404, 'not_found: no such plan; tracking_plan_version_not_found')
  async getTrackingPlanVersion(
    @Request() request: ExpressRequest,
    @Path() planId: string,
    @Path() version: number,
  ): Promise<TrackingPlanVersionAnswer> {
    return {
      data: await this.plans.version(principalOf(request).accountId, planId, versionOf(version)),
    };
  }

  /**
   * Refused: a published version never changes (edit the draft and publish).
   * @isInt version
   */
  @Put('{planId}/versions/{version}')
  @Security('api_key', ['tracking_plans.write'])
  @Response<Problem>(404, 'not_found; tracking_plan_version_not_found')
  @Response<Problem>(409, 'version_immutable')
  async replaceTrackingPlanVersion(
    @Request() request: ExpressRequest,
    @Path() planId: string,
    @Path() version: number,
  ): Promise<void> {
    await this.plans.refuseVersionEdit(principalOf(request).accountId, planId, versionOf(version));
  }

  /**
   * Refused: a published version never changes.
   * @isInt version
   */
  @Patch('{planId}/versions/{version}')
  @Security('api_key', ['tracking_plans.write'])
  @Response<Problem>(404, 'not_found; tracking_plan_version_not_found')
  @Response<Problem>(409, 'version_immutable')
  async updateTrackingPlanVersion(
    @Request() request: ExpressRequest,
    @Path() planId: string,
    @Path() version: number,
  ): Promise<void> {
    await this.plans.refuseVersionEdit(principalOf(request).accountId, planId, versionOf(version));
  }

  /**
   * Refused: a published version is kept for good (pinned keys and replays name it); deleting
   * the plan deletes its versions.
   * @isInt version
   */
  @Delete('{planId}/versions/{version}')
  @Security('api_key', ['tracking_plans.write'])
  @Response<Problem>(404, 'not_found; tracking_plan_version_not_found')
  @Response<Problem>(409, 'version_immutable')
  async deleteTrackingPlanVersion(
    @Request() request: ExpressRequest,
    @Path() planId: string,
    @Path() version: number,
  ): Promise<void> {
    await this.plans.refuseVersionEdit(principalOf(request).accountId, planId, versionOf(version));
  }

  /**
   * A version as Segment's tracking-plan rules, for its replaceRulesInTrackingPlan.
   * @param format `segment` (the only export format).
   * @isInt version
   */
  @Get('{planId}/versions/{version}/export')
  @Security('api_key', ['tracking_plans.read'])
  @Response<Problem>(404, 'not_found; tracking_plan_version_not_found')
  @Response<Problem>(
    422,
    'not_exportable: the version holds what Segment has no place for (alias rules, rule descriptions; errors[])',
  )
  async exportTrackingPlanVersion(
    @Request() request: ExpressRequest,
    @Path() planId: string,
    @Path() version: number,
    @Query() format: 'segment',
  ): Promise<SegmentExportAnswer> {
    void format;
    return this.plans.exportSegment(principalOf(request).accountId, planId, versionOf(version));
  }

  /**
   * What a published version, or the draft, would have done to the last N days of stored calls:
   * violations per code, per event name, and the warehouse's action per call under a policy
   * (docs/tracking-plans.md, "Plans from traffic"). Changes nothing.
   */
  @Post('{planId}/preview')
  @Security('api_key', ['tracking_plans.read'])
  @Response<Problem>(
    404,
    'not_found: no such plan (or write key) in this account; tracking_plan_version_not_found; tracking_plan_binding_not_found: `writeKeyId` binds no plan',
  )
  @Response<Problem>(409, "warehouse_engine_unsupported: the account's warehouse is ClickHouse")
  @Response<Problem>(
    422,
    'invalid_policy: the policy is refused (errors[] with JSON Pointers into the policy)',
  )
  @Response<Problem>(503, "warehouse_unavailable: the account's warehouse cannot be reached")
  async previewTrackingPlan(
    @Request() request: ExpressRequest,
    @Path() planId: string,
    @Body() body: PreviewTrackingPlanBody,
  ): Promise<TrackingPlanPreviewAnswer> {
    return { data: await this.traffic.preview(principalOf(request).accountId, planId, body) };
  }

  /**
   * The changes from one version to another or to the draft, each classified breaking,
   * revision or addition (docs/tracking-plans.md, "Diff between versions").
   * @param from A published version.
   * @param to A published version, or `draft` (the default).
   * @isInt from
   */
  @Get('{planId}/diff')
  @Security('api_key', ['tracking_plans.read'])
  @Response<Problem>(404, 'not_found; tracking_plan_version_not_found')
  async diffTrackingPlan(
    @Request() request: ExpressRequest,
    @Path() planId: string,
    @Query() from: number,
    @Query() to?: string,
  ): Promise<TrackingPlanDiffAnswer> {
    if (!Number.isInteger(from) || from < 1)
      throw invalidField('query.from', 'must be an integer of 1 or more');
    let target: number | 'draft' = 'draft';
    if (to !== undefined && to !== 'draft') {
      if (!/^[1-9][0-9]{0,8}$/.test(to))
        throw invalidField('query.to', 'must be a version (an integer of 1 or more) or draft');
      target = Number(to);
    }
    return { data: await this.plans.diff(principalOf(request).accountId, planId, from, target) };
  }
}

/** The tracking plan a write key binds, and its policy (docs/tracking-plans.md, "Binding"). */
@Route('api/v1/write-keys/{writeKeyId}/tracking-plan')
@Tags('Tracking plans')
// The headers inline: tsoa documents each property of a type literal as a header.
@Response<Problem, { 'Retry-After': string; RateLimit: string; 'RateLimit-Policy': string }>(
  429,
  'rate_limited: the key made more than API_RATE_LIMIT_PER_MINUTE requests this minute. Retry-After: seconds to wait; RateLimit (IETF draft 8): `"600-in-1min"; r=<remaining>; t=<seconds to reset>`, also on every answer',
)
@Response<Problem>(401, 'Missing or invalid API key')
@Response<Problem>(403, 'The API key lacks the required scope')
export class WriteKeyTrackingPlanController extends Controller {
  constructor(private readonly bindings: TrackingPlanBindings) {
    super();
  }

  /**
   * Binds a plan to the write key at `latest` or a pinned version, with its policy, replacing
   * any binding the key had. Ingestion holds the key's events to it within 10 s.
   */
  @Put()
  @Security('api_key', ['tracking_plans.write'])
  @Response<Problem>(400, 'validation_failed: a body of the wrong shape')
  @Response<Problem>(
    404,
    'not_found: no such write key or plan in this account; tracking_plan_version_not_found: the pinned version was never published',
  )
  @Response<Problem>(409, 'tracking_plan_not_published: the plan has no version yet; write_key_revoked')
  @Response<Problem>(
    422,
    'invalid_policy: the policy is refused (errors[]: each problem with a JSON Pointer into the policy)',
  )
  async bindTrackingPlan(
    @Request() request: ExpressRequest,
    @Path() writeKeyId: string,
    @Body() body: BindTrackingPlanBody,
  ): Promise<TrackingPlanBindingAnswer> {
    return { data: await this.bindings.bind(principalOf(request).accountId, writeKeyId, body) };
  }

  /** The key's binding, with the version its events are held to now. */
  @Get()
  @Security('api_key', ['tracking_plans.read'])
  @Response<Problem>(
    404,
    'not_found: no such write key in this account; tracking_plan_binding_not_found: the key binds no plan',
  )
  async getTrackingPlanBinding(
    @Request() request: ExpressRequest,
    @Path() writeKeyId: string,
  ): Promise<TrackingPlanBindingAnswer> {
    return { data: await this.bindings.get(principalOf(request).accountId, writeKeyId) };
  }

  /** Unbinds: the key's events are held to no plan from then on. Idempotent. */
  @Delete()
  @Security('api_key', ['tracking_plans.write'])
  @SuccessResponse(204, 'Unbound')
  @Response<Problem>(404, 'not_found: no such write key in this account')
  async unbindTrackingPlan(@Request() request: ExpressRequest, @Path() writeKeyId: string): Promise<void> {
    await this.bindings.unbind(principalOf(request).accountId, writeKeyId);
    this.setStatus(204);
  }
}
