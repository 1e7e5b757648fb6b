import { Body, Controller, Hidden, Post, Response, Route, Security, Tags } from '@tsoa/runtime';
import type { RegulatedSubjectsRecord } from '@pipeline/tenancy';
import type { Problem } from '../http/problem';
import type { RegulationService } from '../regulations/regulation.service';

export interface RegulatedSubjectsBody {
  /**
   * @minLength 1
   * @maxLength 64
   */
  accountId: string;
}

/**
 * Internal: what ingestion and the delivery consumers decide an account's events by (keyed
 * hashes, a suppression flag and a deletion cut-off each; docs/privacy.md). Both ask with their
 * own token and cache the answer until the account's tenant_changed broadcast.
 */
@Hidden()
@Route('internal/v1/regulated-subjects')
@Tags('Internal')
export class RegulatedSubjectsController extends Controller {
  constructor(private readonly regulations: RegulationService) {
    super();
  }

  @Post()
  @Security('internal_token', ['regulations.subjects'])
  @Response<Problem>(401, 'invalid_service_token')
  async regulatedSubjects(@Body() body: RegulatedSubjectsBody): Promise<{ data: RegulatedSubjectsRecord }> {
    return { data: await this.regulations.regulatedSubjects(body.accountId) };
  }
}
