import type { Request as ExpressRequest } from 'express';
import { Controller, Get, Path, Post, Request, Response, Route, Security, Tags } from '@tsoa/runtime';
import { principalOf } from '../auth/principal';
import type { Scope } from '../auth/scopes';
import { forbidden } from '../http/api-errors';
import type { Problem } from '../http/problem';
import type { JobView } from './job.dto';
import type { JobService } from './job.service';

/** Sync jobs: what a triggered or scheduled sync did. */
@Route('api/v1/jobs')
@Tags('Jobs')
@Response<Problem>(401, 'Missing or invalid API key')
// The headers inline: tsoa documents each property of a type literal as a header.
@Response<Problem, { 'Retry-After': string; RateLimit: string; 'RateLimit-Policy': string }>(
  429,
  'rate_limited: the key made more than API_RATE_LIMIT_PER_MINUTE requests this minute. Retry-After: seconds to wait; RateLimit (IETF draft 8): `"600-in-1min"; r=<remaining>; t=<seconds to reset>`, also on every answer',
)
@Response<Problem>(403, 'The API key lacks the required scope')
export class JobsController extends Controller {
  constructor(private readonly jobs: JobService) {
    super();
  }

  /**
   * A job of the account: kind, trigger, status, rows read and written, error and times. The key
   * needs the read scope of the job's owner: `sources.read` for a source sync,
   * `integrations.read` for an integration run (whose errors describe the integration); with
   * the other scope only it is 403 `insufficient_scope`. Another account's job is 404.
   */
  @Get('{jobId}')
  @Security('api_key', ['sources.read'])
  @Security('api_key', ['integrations.read'])
  @Response<Problem>(404, 'No such job in this account')
  async getJob(@Request() request: ExpressRequest, @Path() jobId: string): Promise<{ data: JobView }> {
    const principal = principalOf(request);
    const job = await this.jobs.get(principal.accountId, jobId);
    // Looked up before the scope check, so another account's job stays a 404 whatever the scopes.
    const needed: Scope = job.kind === 'integration_run' ? 'integrations.read' : 'sources.read';
    if (!principal.scopes.includes(needed)) {
      throw forbidden('insufficient_scope', `This API key lacks the scope ${needed}`);
    }
    return { data: job };
  }

  /**
   * Cancels a queued or running job of the account. A queued job is `cancelled` at once and
   * never starts. A running one is `cancelled` at once too, and its worker stops within a
   * heartbeat (`JOB_HEARTBEAT_INTERVAL_MS`), writing nothing more: the rows it read and
   * wrote so far stay as counted, and what it loaded stays loaded (a later sync goes on from the
   * cursor it saved). The source or integration goes back to `pending` (`paused` if it is),
   * its last sync and last error unchanged. The key needs the write scope of the job's owner:
   * `sources.write` for a source sync, `integrations.write` for an integration run. A job that
   * has ended already is 409 `job_finished`; another account's job is 404.
   */
  @Post('{jobId}/cancel')
  @Security('api_key', ['sources.write'])
  @Security('api_key', ['integrations.write'])
  @Response<Problem>(404, 'No such job in this account')
  @Response<Problem>(409, 'job_finished: the job has succeeded, failed or been cancelled already')
  async cancelJob(@Request() request: ExpressRequest, @Path() jobId: string): Promise<{ data: JobView }> {
    const principal = principalOf(request);
    const job = await this.jobs.get(principal.accountId, jobId);
    const needed: Scope = job.kind === 'integration_run' ? 'integrations.write' : 'sources.write';
    if (!principal.scopes.includes(needed)) {
      throw forbidden('insufficient_scope', `This API key lacks the scope ${needed}`);
    }
    return { data: await this.jobs.cancel(principal.accountId, jobId) };
  }
}
