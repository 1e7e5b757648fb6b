import { AccountLimiter } from '../accounts/account-limits';
import type { DataSource } from 'typeorm';
import { In, Not } from 'typeorm';
import { AppEntity } from '../apps/app.entity';
import type { Principal } from '../auth/principal';
import { conflict, forbidden, notFound, unprocessable } from '../http/api-errors';
import { requireId } from '../http/ids';
import { iso, isoOrNull } from '../http/list-query';
import { listResponse, type ListResponse, type PageRequest } from '../http/pagination';
import { IntegrationEntity } from '../integrations/integration.entity';
import { SourceEntity } from '../sources/source.entity';
import type {
  CreateTaskBody,
  PrecheckGap,
  PrecheckResult,
  TaskCancelResult,
  TaskCreated,
  TaskRunStarted,
  TaskRunView,
  TaskView,
} from './task.dto';
import { TaskEntity } from './task.entity';
import { TaskRunEntity, type RunProgress, type TaskRunStatus } from './task-run.entity';
import { ParamsValidator } from './params-validator';
import { findTemplate } from './templates/catalog';
import type { TaskTemplate } from './templates/template';
import type { AccountWarehouses } from '../warehouse-access/account-warehouses';
import { returnedRows } from '../database/returned-rows';
import { shownError } from '../work-queue/tenant-error';

export const AUTOMATIONS_FEATURE = 'automations';
const UNIQUE_VIOLATION = '23505';

/** The one feature-gate error of every task endpoint and tool: 403 `feature_not_enabled`. */
export function requireAutomations(principal: Pick<Principal, 'features'>): void {
  if (!principal.features.includes(AUTOMATIONS_FEATURE)) {
    throw forbidden(
      'feature_not_enabled',
      'Tasks need the Automations feature, which is not enabled for this workspace',
    );
  }
}

/** Tasks, their runs and template prechecks, scoped to the caller's account. */
export class TaskService {
  private readonly validator = new ParamsValidator();

  constructor(
    private readonly dataSource: DataSource,
    private readonly warehouses: AccountWarehouses,
    /** Called after a run is queued, so an in-process worker picks it up at once. */
    private readonly onRunQueued: () => void = () => undefined,
    private readonly limiter: AccountLimiter = new AccountLimiter(),
  ) {}

  async create(principal: Principal, body: CreateTaskBody): Promise<TaskCreated> {
    requireAutomations(principal);
    const template = this.template(body.template_id);
    const params = this.validator.validate(template, body.params ?? {}, 'body.params');
    const task = await this.dataSource.getRepository(TaskEntity).save(
      this.dataSource.getRepository(TaskEntity).create({
        accountId: principal.accountId,
        templateId: template.id,
        templateVersion: template.version,
        title: body.title ?? template.name,
        params,
        createdByApiKeyId: principal.apiKeyId,
      }),
    );
    return { task_id: task.id };
  }

  /** The template's prerequisites against the account's real state and the caller's key. */
  async precheck(principal: Principal, templateId: string): Promise<PrecheckResult> {
    requireAutomations(principal);
    const template = findTemplate(templateId);
    if (!template) throw notFound('template', templateId);
    const gaps: PrecheckGap[] = [];
    for (const prerequisite of template.prerequisites) {
      if (prerequisite.kind === 'integration') {
        const connected = await this.dataSource.getRepository(AppEntity).existsBy({
          accountId: principal.accountId,
          appType: prerequisite.appType,
          state: 'active',
        });
        if (!connected) {
          gaps.push({
            kind: 'missing_integration',
            capability: { type: 'integration', name: prerequisite.name, appType: prerequisite.appType },
            hint: prerequisite.hint,
          });
        }
      } else if (prerequisite.kind === 'permission') {
        if (!principal.scopes.includes(prerequisite.scope as never)) {
          gaps.push({
            kind: 'missing_permission',
            capability: { type: 'permission', name: prerequisite.name, appType: '' },
            hint: prerequisite.hint,
          });
        }
      } else if (!(await this.hasData(principal.accountId, prerequisite.data))) {
        gaps.push({
          kind: 'missing_data',
          capability: { type: 'data', name: prerequisite.name, appType: '' },
          hint: prerequisite.hint,
        });
      }
    }
    return { ready: gaps.length === 0, gaps };
  }

  /** Queues a run (pending); 409 `task_run_active` while one is pending or running. */
  async start(
    principal: Principal,
    taskId: string,
    runParams?: Record<string, unknown>,
  ): Promise<TaskRunStarted> {
    requireAutomations(principal);
    const task = await this.task(principal.accountId, taskId);
    const template = findTemplate(task.templateId);
    if (!template) {
      throw unprocessable('unknown_template', `Template ${task.templateId} is no longer offered`);
    }
    const params = this.validator.validate(template, { ...task.params, ...(runParams ?? {}) }, 'body.params');
    const runs = this.dataSource.getRepository(TaskRunEntity);
    const run = runs.create({
      taskId: task.id,
      accountId: task.accountId,
      status: 'pending',
      params,
      progress: initialProgress(template),
      result: null,
      error: null,
      attempts: 0,
      workerId: null,
      heartbeatAt: null,
      cancelRequestedAt: null,
      startedAt: null,
      finishedAt: null,
    });
    try {
      await this.dataSource.transaction(async (tx) => {
        await this.limiter.reserve(tx, task.accountId, 'queued_runs');
        await tx.getRepository(TaskRunEntity).insert(run as never);
      });
    } catch (error) {
      if ((error as { code?: string }).code === UNIQUE_VIOLATION) {
        throw conflict('task_run_active', `Task ${task.id} already has a pending or running run`);
      }
      throw error;
    }
    this.onRunQueued();
    return { task_run_id: run.id, params };
  }

  /**
   * Cancels the latest pending or running run: it becomes `cancelled` at once; a worker
   * executing it sees that at its next heartbeat or step boundary and stops.
   */
  async cancel(principal: Principal, taskId: string): Promise<TaskCancelResult> {
    requireAutomations(principal);
    const task = await this.task(principal.accountId, taskId);
    const rows: unknown = await this.dataSource.query(
      `UPDATE task_runs
          SET status = 'cancelled', cancel_requested_at = now(), finished_at = now(), worker_id = NULL,
              updated_at = now(),
              error = jsonb_build_object('code', 'cancelled', 'message', 'Cancelled by request')
        WHERE id = (SELECT id FROM task_runs WHERE task_id = $1 AND status IN ('pending', 'running')
                     ORDER BY created_at DESC LIMIT 1 FOR UPDATE)
          AND status IN ('pending', 'running')
        RETURNING id`,
      [task.id],
    );
    const runId = returnedRows<{ id: string }>(rows)[0]?.id;
    return runId ? { cancelled: true, task_run_id: runId } : { cancelled: false, task_run_id: null };
  }

  async list(
    principal: Principal,
    filter: { status?: TaskRunStatus | 'never_run'; templateId?: string },
    page: PageRequest,
  ): Promise<ListResponse<TaskView>> {
    requireAutomations(principal);
    const query = this.dataSource
      .getRepository(TaskEntity)
      .createQueryBuilder('task')
      .where('task.account_id = :accountId', { accountId: principal.accountId });
    if (filter.templateId)
      query.andWhere('task.template_id = :templateId', { templateId: filter.templateId });
    const latestStatus =
      '(SELECT r.status FROM task_runs r WHERE r.task_id = task.id ORDER BY r.created_at DESC LIMIT 1)';
    if (filter.status === 'never_run') query.andWhere(`${latestStatus} IS NULL`);
    else if (filter.status) query.andWhere(`${latestStatus} = :status`, { status: filter.status });
    const [tasks, total] = await query
      .orderBy('task.created_at', 'DESC')
      .addOrderBy('task.id', 'DESC')
      .skip(page.offset)
      .take(page.limit)
      .getManyAndCount();
    const latest = await this.latestRuns(tasks.map((t) => t.id));
    return listResponse(
      tasks.map((task) => toTaskView(task, latest.get(task.id) ?? null)),
      total,
      page,
    );
  }

  /** A task with its runs (newest first), their progress, results and errors. */
  async get(
    principal: Principal,
    taskId: string,
    runsLimit = 20,
  ): Promise<TaskView & { runs: TaskRunView[] }> {
    requireAutomations(principal);
    const task = await this.task(principal.accountId, taskId);
    const runs = await this.dataSource
      .getRepository(TaskRunEntity)
      .find({ where: { taskId: task.id }, order: { createdAt: 'DESC' }, take: runsLimit });
    return { ...toTaskView(task, runs[0] ?? null), runs: runs.map(toRunView) };
  }

  private template(id: string): TaskTemplate<never> {
    const template = findTemplate(id);
    if (!template) {
      throw unprocessable('unknown_template', `No template with id ${id}`, [
        { path: 'body.template_id', message: 'is not a template id' },
      ]);
    }
    return template;
  }

  private async task(accountId: string, taskId: string): Promise<TaskEntity> {
    const task = await this.dataSource
      .getRepository(TaskEntity)
      .findOneBy({ id: requireId('task', taskId), accountId });
    if (!task) throw notFound('task', taskId);
    return task;
  }

  private async latestRuns(taskIds: string[]): Promise<Map<string, TaskRunEntity>> {
    if (taskIds.length === 0) return new Map();
    const runs = await this.dataSource
      .getRepository(TaskRunEntity)
      .createQueryBuilder('run')
      .distinctOn(['run.task_id'])
      .where({ taskId: In(taskIds) })
      .orderBy('run.task_id')
      .addOrderBy('run.created_at', 'DESC')
      .getMany();
    return new Map(runs.map((r) => [r.taskId, r]));
  }

  private async hasData(accountId: string, data: 'connectors' | 'warehouse_rows'): Promise<boolean> {
    if (data === 'warehouse_rows') {
      const { engine, account } = await this.warehouses.locate(accountId);
      const [row] = await engine.query(account, 'has_rows', {}, { purpose: 'query' });
      return row?.found === true;
    }
    const live = { accountId, state: Not('deleted' as const) };
    return (
      (await this.dataSource.getRepository(AppEntity).existsBy(live)) ||
      (await this.dataSource.getRepository(SourceEntity).existsBy(live)) ||
      (await this.dataSource.getRepository(IntegrationEntity).existsBy(live))
    );
  }
}

export function initialProgress(template: TaskTemplate<never>): RunProgress {
  return {
    steps: template.steps.map((s) => ({
      id: s.id,
      name: s.name,
      status: 'pending',
      startedAt: null,
      finishedAt: null,
    })),
    completedSteps: 0,
    totalSteps: template.steps.length,
    currentStep: null,
  };
}

export function toRunView(run: TaskRunEntity): TaskRunView {
  return {
    task_run_id: run.id,
    status: run.status,
    params: run.params,
    progress: 'steps' in run.progress ? (run.progress as RunProgress) : null,
    result: run.result,
    error: shownError(run.error),
    attempts: run.attempts,
    created_at: iso(run.createdAt),
    started_at: isoOrNull(run.startedAt),
    finished_at: isoOrNull(run.finishedAt),
  };
}

function toTaskView(task: TaskEntity, latest: TaskRunEntity | null): TaskView {
  return {
    task_id: task.id,
    template_id: task.templateId,
    template_version: task.templateVersion,
    title: task.title,
    params: task.params,
    created_at: iso(task.createdAt),
    latest_run: latest ? toRunView(latest) : null,
  };
}
