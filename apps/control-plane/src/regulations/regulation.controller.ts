import type { Request as ExpressRequest } from 'express';
import {
  Body,
  Controller,
  Delete,
  Get,
  Path,
  Post,
  Query,
  Request,
  Response,
  Route,
  Security,
  Tags,
} from '@tsoa/runtime';
import { principalOf } from '../auth/principal';
import { invalidField } from '../http/api-errors';
import { pageRequest, type ListResponse } from '../http/pagination';
import type { Problem } from '../http/problem';
import type {
  CreateRegulationBody,
  RegulationAnswer,
  RegulationCreated,
  RegulationDryRun,
  RegulationView,
  SuppressionView,
} from './regulation.dto';
import type { RegulationStatus, RegulationType, SubjectType } from './regulation-types';
import type { Regulations } from './regulations';

const sinceOf = (since: string | undefined): Date | undefined => {
  if (since === undefined) return undefined;
  const at = new Date(since);
  if (Number.isNaN(at.getTime())) throw invalidField('query.since', 'must be an ISO 8601 time');
  return at;
};

/**
 * Privacy regulations (docs/privacy.md): suppress a person's new events at the door and at every
 * later stage, erase what the pipeline holds of them from every warehouse, our own copies and
 * each destination that can delete, and keep an audit record. The bodies are Segment's Public
 * API's, so its scripts work with the base URL changed.
 */
@Route('api/v1/regulations')
@Tags('Privacy')
// The headers inline: tsoa documents each property of a type literal as a header.
@Response<Problem, { 'Retry-After': string; RateLimit: string; 'RateLimit-Policy': string }>(
  429,
  'rate_limited: the key made more than API_RATE_LIMIT_PER_MINUTE requests this minute. Retry-After: seconds to wait; RateLimit (IETF draft 8): `"600-in-1min"; r=<remaining>; t=<seconds to reset>`, also on every answer',
)
@Response<Problem>(401, 'Missing or invalid API key')
@Response<Problem>(403, 'The API key lacks the required scope')
export class RegulationsController extends Controller {
  constructor(private readonly regulations: Regulations) {
    super();
  }

  /**
   * Creates a regulation (Segment's createWorkspaceRegulation). Suppression takes effect at
   * every ingestion instance and consumer within 10 s of the answer; a deleting type erases
   * events received at or before the answer (its `cutoff`) and never delivers them again,
   * then reports each target's status. `dryRun` answers what would be erased and changes nothing.
   */
  @Post()
  @Security('api_key', ['regulations.write'])
  @Response<Problem>(
    400,
    'validation_failed: an unknown regulationType or subjectType, no subjectIds, more than 5000, or an empty or over-1024-character id',
  )
  // RateLimit headers too: the API key's limit sets them on every answer, this 429 included.
  @Response<Problem, { 'Retry-After': string; RateLimit: string; 'RateLimit-Policy': string }>(
    429,
    'regulation_quota_exceeded: the account would pass REGULATION_SUBJECTS_PER_MONTH subject ids this calendar month (UTC); nothing was changed. (rate_limited: the API key rate limit, as on every route; Retry-After: seconds to wait)',
  )
  async createRegulation(
    @Request() request: ExpressRequest,
    @Body() body: CreateRegulationBody,
  ): Promise<RegulationCreated | RegulationDryRun> {
    const principal = principalOf(request);
    return this.regulations.create(principal.accountId, principal.apiKeyId, body);
  }

  /**
   * Lists the account's regulations, newest first.
   * @param status An overall status.
   * @param regulationType A regulation type.
   * @param since Created at or after (ISO 8601).
   * @param limit Items per page, 1-100 (default 20).
   * @param offset Items to skip (default 0).
   * @isInt limit
   * @isInt offset
   */
  @Get()
  @Security('api_key', ['regulations.read'])
  @Response<Problem>(400, 'validation_failed')
  async listRegulations(
    @Request() request: ExpressRequest,
    @Query() status?: RegulationStatus,
    @Query() regulationType?: RegulationType,
    @Query() since?: string,
    @Query() limit?: number,
    @Query() offset?: number,
  ): Promise<ListResponse<RegulationView>> {
    const sinceAt = sinceOf(since);
    return this.regulations.service.list(
      principalOf(request).accountId,
      {
        ...(status ? { status } : {}),
        ...(regulationType ? { regulationType } : {}),
        ...(sinceAt ? { since: sinceAt } : {}),
      },
      pageRequest(limit, offset),
    );
  }

  /** One regulation with each target's status (Segment's getRegulation: `data.regulation`). */
  @Get('{regulateId}')
  @Security('api_key', ['regulations.read'])
  @Response<Problem>(404, 'regulation_not_found: no such regulation in this account')
  async getRegulation(
    @Request() request: ExpressRequest,
    @Path() regulateId: string,
  ): Promise<RegulationAnswer> {
    return {
      data: { regulation: await this.regulations.service.get(principalOf(request).accountId, regulateId) },
    };
  }
}

/** The account's suppressed subjects, and lifting a regulation's suppression. */
@Route('api/v1/suppressions')
@Tags('Privacy')
// The headers inline: tsoa documents each property of a type literal as a header.
@Response<Problem, { 'Retry-After': string; RateLimit: string; 'RateLimit-Policy': string }>(
  429,
  'rate_limited: the key made more than API_RATE_LIMIT_PER_MINUTE requests this minute. Retry-After: seconds to wait; RateLimit (IETF draft 8): `"600-in-1min"; r=<remaining>; t=<seconds to reset>`, also on every answer',
)
@Response<Problem>(401, 'Missing or invalid API key')
@Response<Problem>(403, 'The API key lacks the required scope')
export class SuppressionsController extends Controller {
  constructor(private readonly regulations: Regulations) {
    super();
  }

  /**
   * Lists the account's suppressed subjects by keyed hash, newest first.
   * @param subjectType With subjectId: the subject type of the one subject to look for.
   * @param subjectId With subjectType: lists only this subject (found by its hash).
   * @param limit Items per page, 1-100 (default 20).
   * @param offset Items to skip (default 0).
   * @isInt limit
   * @isInt offset
   */
  @Get()
  @Security('api_key', ['regulations.read'])
  @Response<Problem>(400, 'validation_failed: subjectId without subjectType, or the other way round')
  async listSuppressions(
    @Request() request: ExpressRequest,
    @Query() subjectType?: SubjectType,
    @Query() subjectId?: string,
    @Query() limit?: number,
    @Query() offset?: number,
  ): Promise<ListResponse<SuppressionView>> {
    if ((subjectType === undefined) !== (subjectId === undefined))
      throw invalidField(
        subjectType ? 'query.subjectId' : 'query.subjectType',
        'subjectType and subjectId go together',
      );
    return this.regulations.service.suppressions(
      principalOf(request).accountId,
      subjectType && subjectId !== undefined ? { type: subjectType, id: subjectId } : null,
      pageRequest(limit, offset),
    );
  }

  /**
   * Lifts the suppression a regulation made, as an UNSUPPRESS of its subjects would (new events
   * flow again; nothing erased comes back). Answers the UNSUPPRESS regulation it records.
   */
  @Delete('{regulateId}')
  @Security('api_key', ['regulations.write'])
  @Response<Problem>(404, 'regulation_not_found')
  @Response<Problem>(409, 'not_suppressed: none of its subjects is suppressed by it any more')
  async liftSuppression(
    @Request() request: ExpressRequest,
    @Path() regulateId: string,
  ): Promise<RegulationCreated> {
    const principal = principalOf(request);
    return this.regulations.service.lift(principal.accountId, regulateId, principal.apiKeyId);
  }
}
