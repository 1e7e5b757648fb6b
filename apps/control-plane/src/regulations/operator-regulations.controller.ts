import { Controller, Get, Path, Query, Response, Route, Security, Tags } from '@tsoa/runtime';
import { invalidField } from '../http/api-errors';
import { isUuid } from '../http/ids';
import { pageRequest, type ListResponse } from '../http/pagination';
import type { Problem } from '../http/problem';
import type { RegulationAnswer, RegulationView } from './regulation.dto';
import type { RegulationStatus, RegulationType } from './regulation-types';
import type { RegulationService } from './regulation.service';

/**
 * Every account's regulations for the operator (`cli regulations`): audit records with each
 * target's status, never raw ids.
 */
@Route('api/v1/operator/regulations')
@Tags('Operator')
@Response<Problem>(401, 'invalid_operator_token: no operator token, or another one')
@Response<Problem>(404, 'not_found: OPERATOR_API_TOKEN is unset, so the operator API is off')
@Response<Problem>(
  429,
  'too_many_failed_attempts: this address presented OPERATOR_TOKEN_FAILURES_PER_MINUTE wrong operator tokens this minute',
)
export class OperatorRegulationsController extends Controller {
  constructor(private readonly regulations: RegulationService) {
    super();
  }

  /**
   * Regulations across accounts, newest first.
   * @param accountId Only this account's.
   * @param status An overall status.
   * @param regulationType A regulation type.
   * @param limit Items per page, 1-100 (default 20).
   * @param offset Items to skip (default 0).
   * @isInt limit
   * @isInt offset
   */
  @Get()
  @Security('operator_token')
  @Response<Problem>(400, 'validation_failed: accountId is not a UUID')
  async listAllRegulations(
    @Query() accountId?: string,
    @Query() status?: RegulationStatus,
    @Query() regulationType?: RegulationType,
    @Query() limit?: number,
    @Query() offset?: number,
  ): Promise<ListResponse<RegulationView>> {
    if (accountId !== undefined && !isUuid(accountId))
      throw invalidField('query.accountId', 'must be a UUID');
    return this.regulations.list(
      accountId ?? null,
      { ...(status ? { status } : {}), ...(regulationType ? { regulationType } : {}) },
      pageRequest(limit, offset),
    );
  }

  /** One regulation of any account. */
  @Get('{regulateId}')
  @Security('operator_token')
  @Response<Problem>(404, 'regulation_not_found')
  async getAnyRegulation(@Path() regulateId: string): Promise<RegulationAnswer> {
    return { data: { regulation: await this.regulations.get(null, regulateId) } };
  }
}
