import type { Request as ExpressRequest } from 'express';
import { Controller, Get, Path, Request, Response, Route, Security, Tags } from '@tsoa/runtime';
import { principalOf } from '../auth/principal';
import type { Problem } from '../http/problem';
import type { JobView } from './job.dto';
import type { JobService } from './job.service';

/** Sync jobs: what a triggered or scheduled sync did. */
@Route('api/v1/jobs')
@Tags('Jobs')
@Response<Problem>(401, 'Missing or invalid API key')
@Response<Problem>(403, 'The API key lacks the required scope')
export class JobsController extends Controller {
  constructor(private readonly jobs: JobService) {
    super();
  }

  /** A job of the account: kind, trigger, status, rows read and written, error and times. */
  @Get('{jobId}')
  @Security('api_key', ['sources.read'])
  @Response<Problem>(404, 'No such job in this account')
  async getJob(@Request() request: ExpressRequest, @Path() jobId: string): Promise<{ data: JobView }> {
    return { data: await this.jobs.get(principalOf(request).accountId, jobId) };
  }
}
