import type { Request as ExpressRequest } from 'express';
import {
  Body,
  Controller,
  Path,
  Post,
  Request,
  Response,
  Route,
  Security,
  SuccessResponse,
  Tags,
} from '@tsoa/runtime';
import { principalOf } from '../auth/principal';
import type { Problem } from '../http/problem';
import type {
  CreateTaskBody,
  StartTaskBody,
  TaskCancelResult,
  TaskCreated,
  TaskRunStarted,
} from './task.dto';
import type { TaskService } from './task.service';

/**
 * Agent-run units of work created from templates (agent goals). Every task endpoint needs the
 * workspace's Automations feature: without it, 403 `feature_not_enabled`. There is no REST
 * endpoint to list or read tasks: the agent tool interface (MCP at `/mcp`) offers `tasks_list`
 * and `tasks_get`.
 */
@Route('api/v1/tasks')
@Tags('Tasks and templates')
@Response<Problem>(400, 'Invalid request: unknown body fields, wrong types')
@Response<Problem>(401, 'Missing or invalid API key')
// The headers inline: tsoa documents each property of a type literal as a header.
@Response<Problem, { 'Retry-After': string; RateLimit: string; 'RateLimit-Policy': string }>(
  429,
  'rate_limited: the key made more than API_RATE_LIMIT_PER_MINUTE requests this minute. Retry-After: seconds to wait; RateLimit (IETF draft 8): `"600-in-1min"; r=<remaining>; t=<seconds to reset>`, also on every answer',
)
@Response<Problem>(403, 'insufficient_scope, or feature_not_enabled (the Automations feature is off)')
export class TasksController extends Controller {
  constructor(private readonly tasks: TaskService) {
    super();
  }

  /**
   * Creates a task from a template. `params` are validated against the template's parameter
   * schema (JSON Schema; defaults are filled in); `title` defaults to the template's name.
   */
  @Post()
  @Security('api_key', ['tasks.write'])
  @SuccessResponse(201, 'Created')
  @Response<Problem>(
    422,
    'unknown_template, or invalid_params: the params fail the template schema (each failing path in errors[])',
  )
  async createTask(
    @Request() request: ExpressRequest,
    @Body() body: CreateTaskBody,
  ): Promise<{ data: TaskCreated }> {
    const data = await this.tasks.create(principalOf(request), body);
    this.setStatus(201);
    return { data };
  }

  /**
   * Queues a run of the task (status `pending`); a worker executes it: `running`, then
   * `succeeded` (the report in its result), `failed` or `cancelled`. Optional run-time `params`
   * override the task's for this run and are validated again; the answer carries the effective
   * params. A run that cannot reach the warehouse fails with `error.code` `warehouse_unavailable`.
   */
  @Post('{taskId}/start')
  @Security('api_key', ['tasks.manage'])
  @SuccessResponse(202, 'Accepted: the run is queued')
  @Response<Problem>(404, 'No such task in this account')
  @Response<Problem>(
    409,
    'task_run_active: a run of the task is already pending or running; account_limit_reached: the account has ACCOUNT_MAX_QUEUED_RUNS queued runs',
  )
  @Response<Problem>(422, 'invalid_params: the run-time params fail the template schema')
  async startTask(
    @Request() request: ExpressRequest,
    @Path() taskId: string,
    @Body() body?: StartTaskBody,
  ): Promise<{ data: TaskRunStarted }> {
    const data = await this.tasks.start(principalOf(request), taskId, body?.params);
    this.setStatus(202);
    return { data };
  }

  /**
   * Cancels the latest pending or running run of the task (it becomes `cancelled`; a running
   * step stops at its next check). Without an active run: `cancelled: false, task_run_id: null`.
   */
  @Post('{taskId}/cancel')
  @Security('api_key', ['tasks.manage'])
  @Response<Problem>(404, 'No such task in this account')
  async cancelTask(
    @Request() request: ExpressRequest,
    @Path() taskId: string,
  ): Promise<{ data: TaskCancelResult }> {
    return { data: await this.tasks.cancel(principalOf(request), taskId) };
  }
}
