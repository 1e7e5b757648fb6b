import { randomUUID } from 'node:crypto';
import type {
  DeletionBatchOutcome,
  DeletionPollOutcome,
  SubjectDeletionClient,
} from '@pipeline/destinations';
import type { Logger } from '@pipeline/logger';
import type { RegulatedSubjects, ResolvedDestination, SubjectType } from '@pipeline/tenancy';
import type { DataSource } from 'typeorm';
import type { CredentialCipher } from '../apps/credential-cipher';
import type { AccountWarehouses } from '../warehouse-access/account-warehouses';
import type { OffsetMarks, RegulationFence } from './regulation-fence';
import {
  effectOf,
  isTerminal,
  overallStatusOf,
  type RegulationType,
  type TargetStatus,
} from './regulation-types';
import type { RegulationService, TargetRow } from './regulation.service';
import { subjectIdsOf } from './regulations';

export interface RegulationWorkerOptions {
  /** How often the worker looks for work (REGULATION_WORKER_INTERVAL_MS). */
  intervalMs: number;
  /**
   * How long after a regulation's answer its fence is recorded: the bound within which every
   * ingestion instance and consumer has heard of it (the tenant-change rule, 10 s).
   */
  fenceDelayMs: number;
  /** Warehouse rows erased per statement (REGULATION_WAREHOUSE_ROWS_PER_STEP). */
  warehouseRowsPerStep: number;
  /** Dead-letter index rows read per step. */
  deadLetterRowsPerStep: number;
  /** Vendor requests one step of one destination may make (fewer when the vendor needs a gap). */
  vendorRequestsPerStep: number;
  /** How often a vendor's asynchronous deletion is asked about (REGULATION_VENDOR_POLL_MS). */
  vendorPollMs: number;
  /** Tries of a step that fails for a reason that may pass (a warehouse down, a vendor 5xx). */
  maxAttempts: number;
  /** The first retry's delay; doubled each try, up to an hour. */
  retryBaseMs: number;
  /** How long a worker holds a regulation before another may take it over (it died). */
  leaseMs: number;
}

export const defaultRegulationWorkerOptions: RegulationWorkerOptions = {
  intervalMs: 1000,
  fenceDelayMs: 10_000,
  warehouseRowsPerStep: 10_000,
  deadLetterRowsPerStep: 500,
  vendorRequestsPerStep: 20,
  vendorPollMs: 3_600_000,
  maxAttempts: 12,
  retryBaseMs: 5_000,
  leaseMs: 120_000,
};

/** What the worker erases with: each piece is its own module's (the engines, the copies, the vendors). */
export interface RegulationWorkerDependencies {
  dataSource: DataSource;
  service: RegulationService;
  cipher: CredentialCipher;
  warehouses: AccountWarehouses;
  fence: Pick<RegulationFence, 'record' | 'passed'>;
  eraseDeadLetters(
    accountId: string,
    regulation: Pick<RegulatedSubjects, 'decide'>,
    options: { maxRows: number; after: string | null },
  ): Promise<{ next: string | null; deleted: number; rewritten: number }>;
  /** Null without the debugger's Redis: nothing is kept there, so nothing is erased. */
  eraseDebugger:
    | ((
        writeKeyIds: readonly string[],
        regulation: Pick<RegulatedSubjects, 'decide'>,
      ) => Promise<{ removed: number }>)
    | null;
  vendorClient(appType: string): SubjectDeletionClient | undefined;
  resolveIntegration(integrationId: string): Promise<ResolvedDestination | null>;
  logger: Logger;
}

interface WorkedRegulation {
  id: string;
  account_id: string;
  regulation_type: RegulationType;
  subject_type: SubjectType;
  created_at: Date;
  cutoff: Date | null;
  fence: OffsetMarks | null;
  sealed_identities: string | null;
  seal_key_id: string | null;
}

/** A step's outcome for one target: what to write back. */
interface StepResult {
  status: TargetStatus;
  progress?: number;
  cursor?: string | null;
  erased?: number;
  vendorJobIds?: string[];
  error?: { code: string; message: string } | null;
  /** When to look at it again; now when absent. */
  nextAttemptInMs?: number;
  /** The step failed for a reason that may pass: counts an attempt. */
  attempted?: boolean;
}

const IDENTITIES = 'regulation-identities:';

const errorText = (error: unknown) => (error instanceof Error ? error.message : String(error));

/**
 * Works the running regulations (docs/privacy.md, "What each target does"): records each one's
 * fence when it has taken effect everywhere, then steps every target whose turn it is, each step
 * bounded (rows per statement, requests per step) and its progress written at once, so one
 * account's 100,000 deletions share the worker with every other account's, and a worker that dies
 * mid-step resumes where it was (at most the batch in flight is sent again). When every target is
 * done, failed or not supported, the regulation finishes and its raw ids and captured emails are
 * erased; the audit record stays.
 */
export class RegulationWorker {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private readonly owner = randomUUID();

  constructor(
    private readonly deps: RegulationWorkerDependencies,
    private readonly options: RegulationWorkerOptions = defaultRegulationWorkerOptions,
  ) {}

  start(): void {
    if (this.timer) return;
    const tick = () => {
      this.running ??= this.cycle()
        .then(
          () => undefined,
          (error: unknown) => {
            this.deps.logger.error('regulation worker cycle failed; trying again', {
              error: errorText(error),
            });
          },
        )
        .finally(() => (this.running = undefined));
    };
    this.timer = setInterval(tick, this.options.intervalMs);
    this.timer.unref();
    tick();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.running;
  }

  /** One pass over the running regulations, oldest first; what it did, for tests and logs. */
  async cycle(): Promise<{ stepped: number; finished: number }> {
    const { dataSource } = this.deps;
    const ids = (await dataSource.query(
      `SELECT id FROM regulations WHERE status = 'running'
          AND (lease_until IS NULL OR lease_until < now() OR lease_owner = $1)
        ORDER BY created_at LIMIT 100`,
      [this.owner],
    )) as { id: string }[];
    let stepped = 0;
    let finished = 0;
    for (const { id } of ids) {
      const regulation = await this.lease(id);
      if (!regulation) continue;
      const result = await this.work(regulation);
      stepped += result.stepped;
      if (result.finished) finished += 1;
    }
    return { stepped, finished };
  }

  private async lease(id: string): Promise<WorkedRegulation | null> {
    const rows = (await this.deps.dataSource.query(
      `UPDATE regulations SET lease_owner = $2, lease_until = now() + make_interval(secs => $3::double precision / 1000)
        WHERE id = $1 AND status = 'running' AND (lease_until IS NULL OR lease_until < now() OR lease_owner = $2)
        RETURNING id, account_id, regulation_type, subject_type, created_at, cutoff, fence, sealed_identities, seal_key_id`,
      [id, this.owner, this.options.leaseMs],
    )) as [WorkedRegulation[], number];
    return rows[0][0] ?? null;
  }

  private async work(regulation: WorkedRegulation): Promise<{ stepped: number; finished: boolean }> {
    const { dataSource, logger } = this.deps;
    const targets = (await dataSource.query(
      'SELECT * FROM regulation_targets WHERE regulation_id = $1 ORDER BY target',
      [regulation.id],
    )) as TargetRow[];
    if (!regulation.fence && Date.now() - regulation.created_at.getTime() >= this.options.fenceDelayMs) {
      const kinds = [
        'warehouse',
        ...new Set(
          targets.filter((t) => t.kind === 'destination' && t.app_type).map((t) => t.app_type as string),
        ),
      ];
      try {
        const fence = await this.deps.fence.record(kinds);
        await dataSource.query('UPDATE regulations SET fence = $2, fence_at = now() WHERE id = $1', [
          regulation.id,
          JSON.stringify(fence),
        ]);
        regulation.fence = fence;
      } catch (error) {
        logger.warn('regulation fence not recorded; trying again', {
          regulationId: regulation.id,
          error: errorText(error),
        });
      }
    }
    const ids = await this.deps.service.sealedSubjects(regulation.id);
    let stepped = 0;
    for (const target of targets) {
      if (isTerminal(target.status) || target.next_attempt_at.getTime() > Date.now()) continue;
      let result: StepResult;
      try {
        result = await this.step(regulation, target, ids ?? []);
      } catch (error) {
        result = {
          status: target.status,
          attempted: true,
          error: { code: 'step_failed', message: errorText(error) },
        };
      }
      await this.record(regulation, target, result);
      stepped += 1;
    }
    return { stepped, finished: await this.finishIfDone(regulation.id) };
  }

  private async step(
    regulation: WorkedRegulation,
    target: TargetRow,
    ids: readonly string[],
  ): Promise<StepResult> {
    if (target.kind === 'destination') return this.destinationStep(regulation, target, ids);
    if (!regulation.fence) return { status: 'waiting_fence' };
    if (target.kind === 'warehouse') return this.warehouseStep(regulation, target, ids);
    if (target.kind === 'dead_letters') return this.deadLettersStep(regulation, target);
    return this.debuggerStep(regulation);
  }

  private async warehouseStep(
    regulation: WorkedRegulation,
    target: TargetRow,
    ids: readonly string[],
  ): Promise<StepResult> {
    if (
      target.status === 'waiting_fence' &&
      !(await this.deps.fence.passed('warehouse', regulation.fence ?? {}))
    )
      return { status: 'waiting_fence' };
    const located = await this.deps.warehouses.locate(regulation.account_id);
    const subjects = subjectIdsOf(regulation.subject_type, ids);
    const scope = { ...subjects, ...this.keptAfterCutoff(regulation) };
    // Emails go before the rows that hold them: a vendor that deletes by email needs them.
    if (effectOf[regulation.regulation_type].vendors && regulation.sealed_identities === null) {
      const emails = await located.engine.subjectEmails(located.account, subjects);
      const sealed = this.deps.cipher.seal({ emails }, IDENTITIES + regulation.id);
      await this.deps.dataSource.query(
        'UPDATE regulations SET sealed_identities = $2, seal_key_id = coalesce(seal_key_id, $3) WHERE id = $1',
        [regulation.id, sealed.ciphertext, sealed.keyId],
      );
      regulation.sealed_identities = sealed.ciphertext;
    }
    const erasure = await located.engine.eraseSubjects(located.account, scope, {
      maxRows: this.options.warehouseRowsPerStep,
    });
    const erased = target.erased + Object.values(erasure.erased).reduce((sum, n) => sum + n, 0);
    if (erasure.more) return { status: 'running', erased };
    await located.engine.purgeErased(located.account);
    const left = await located.engine.countSubjectRows(located.account, scope);
    const remaining = Object.values(left).reduce((sum, n) => sum + n, 0);
    // A row written while the step ran (a consumer that had not passed the fence) is erased next time.
    return remaining === 0 ? { status: 'done', erased, error: null } : { status: 'running', erased };
  }

  /**
   * DELETE_ONLY keeps events received after the cut-off: only rows received at or before it are
   * erased. The suppressing types erase every row of the subject (none can come after).
   */
  private keptAfterCutoff(regulation: WorkedRegulation): { receivedAtOrBefore?: Date } {
    return effectOf[regulation.regulation_type].suppress === true || !regulation.cutoff
      ? {}
      : { receivedAtOrBefore: regulation.cutoff };
  }

  private async deadLettersStep(regulation: WorkedRegulation, target: TargetRow): Promise<StepResult> {
    const decided = await this.deps.service.regulationOf(regulation.account_id);
    const step = await this.deps.eraseDeadLetters(regulation.account_id, decided, {
      maxRows: this.options.deadLetterRowsPerStep,
      after: target.cursor,
    });
    const erased = target.erased + step.deleted + step.rewritten;
    return step.next === null
      ? { status: 'done', cursor: null, erased, error: null }
      : { status: 'running', cursor: step.next, erased };
  }

  private async debuggerStep(regulation: WorkedRegulation): Promise<StepResult> {
    if (!this.deps.eraseDebugger) return { status: 'done', error: null };
    const keys = (await this.deps.dataSource.query('SELECT id FROM write_keys WHERE account_id = $1', [
      regulation.account_id,
    ])) as { id: string }[];
    const decided = await this.deps.service.regulationOf(regulation.account_id);
    const { removed } = await this.deps.eraseDebugger(
      keys.map((key) => key.id),
      decided,
    );
    return { status: 'done', erased: removed, error: null };
  }

  private async destinationStep(
    regulation: WorkedRegulation,
    target: TargetRow,
    ids: readonly string[],
  ): Promise<StepResult> {
    const client = target.app_type ? this.deps.vendorClient(target.app_type) : undefined;
    if (!client) return { status: 'not_supported', error: null };
    if (!regulation.fence || !target.app_type) return { status: 'waiting_fence' };
    if (target.status === 'waiting_fence') {
      if (!(await this.deps.fence.passed(target.app_type, regulation.fence)))
        return { status: 'waiting_fence' };
    }
    const integrationId = target.target.slice('integration:'.length);
    const destination = await this.deps.resolveIntegration(integrationId);
    if (!destination)
      return {
        status: 'failed',
        error: {
          code: 'credential_missing',
          message: 'The integration or its app is gone, or the app has no credentials',
        },
      };
    const missing = client.missingCredential(destination);
    if (missing)
      return {
        status: 'failed',
        error: {
          code: 'credential_missing',
          message: `The ${target.app_type} app lacks the credential ${missing}, which the vendor's deletion API needs`,
        },
      };
    if (target.status === 'forwarded') return this.poll(client, destination, target);
    const emails = await this.capturedEmails(regulation);
    // Emails are captured with the warehouse's first step: a vendor that deletes by them waits for it.
    if (emails === null) return { status: 'pending' };
    const batches = client.plan({ ...subjectIdsOf(regulation.subject_type, ids), emails });
    let progress = target.progress;
    const jobs = [...target.vendor_job_ids];
    const requests = client.minIntervalMs > 0 ? 1 : this.options.vendorRequestsPerStep;
    for (let sent = 0; sent < requests && progress < batches.length; sent += 1) {
      const batch = batches[progress];
      if (!batch) break;
      const outcome: DeletionBatchOutcome = await client.send(
        destination,
        batch,
        AbortSignal.timeout(30_000),
      );
      if (outcome.status === 'failed') {
        const error = { code: outcome.code, message: outcome.message };
        if (!outcome.retryable) return { status: 'failed', progress, vendorJobIds: jobs, error };
        return {
          status: 'running',
          progress,
          vendorJobIds: jobs,
          error,
          attempted: true,
          ...(outcome.retryAfterMs !== undefined ? { nextAttemptInMs: outcome.retryAfterMs } : {}),
        };
      }
      if (outcome.status === 'forwarded') jobs.push(outcome.vendorJobId);
      progress += 1;
      // Written per request: a worker that dies here sends this batch again, never the ones before.
      await this.deps.dataSource.query(
        `UPDATE regulation_targets SET progress = $3, vendor_job_ids = $4, status = 'running', updated_at = now()
          WHERE regulation_id = $1 AND target = $2`,
        [target.regulation_id, target.target, progress, jobs],
      );
    }
    if (progress < batches.length)
      return { status: 'running', progress, vendorJobIds: jobs, nextAttemptInMs: client.minIntervalMs };
    if (jobs.length > 0)
      return {
        status: 'forwarded',
        progress,
        vendorJobIds: jobs,
        nextAttemptInMs: this.options.vendorPollMs,
        error: null,
      };
    return { status: 'done', progress, vendorJobIds: jobs, error: null };
  }

  private async poll(
    client: SubjectDeletionClient,
    destination: ResolvedDestination,
    target: TargetRow,
  ): Promise<StepResult> {
    if (!client.poll) return { status: 'done', error: null };
    let open = 0;
    for (const job of target.vendor_job_ids) {
      const outcome: DeletionPollOutcome = await client.poll(destination, job, AbortSignal.timeout(30_000));
      if (outcome.status === 'failed')
        return { status: 'failed', error: { code: outcome.code, message: outcome.message } };
      if (outcome.status === 'forwarded') open += 1;
    }
    return open === 0
      ? { status: 'done', error: null }
      : { status: 'forwarded', nextAttemptInMs: this.options.vendorPollMs };
  }

  /** The emails captured from the warehouse; null while they are not (a warehouse target still to run). */
  private async capturedEmails(regulation: WorkedRegulation): Promise<string[] | null> {
    if (regulation.sealed_identities && regulation.seal_key_id) {
      const opened = this.deps.cipher.open(
        { ciphertext: regulation.sealed_identities, keyId: regulation.seal_key_id },
        IDENTITIES + regulation.id,
      ) as { emails?: unknown };
      return Array.isArray(opened.emails)
        ? opened.emails.filter((e): e is string => typeof e === 'string')
        : [];
    }
    const [warehouse] = (await this.deps.dataSource.query(
      `SELECT status FROM regulation_targets WHERE regulation_id = $1 AND kind = 'warehouse'`,
      [regulation.id],
    )) as { status: TargetStatus }[];
    // No warehouse step will capture them (none, or it failed first): nothing to delete by email.
    return warehouse && !isTerminal(warehouse.status) ? null : [];
  }

  private async record(regulation: WorkedRegulation, target: TargetRow, result: StepResult): Promise<void> {
    const attempts = target.attempts + (result.attempted ? 1 : 0);
    let status = result.status;
    let delay = result.nextAttemptInMs ?? 0;
    if (result.attempted) {
      if (attempts >= this.options.maxAttempts) status = 'failed';
      else delay = Math.max(delay, Math.min(this.options.retryBaseMs * 2 ** (attempts - 1), 3_600_000));
      this.deps.logger.warn('regulation target step failed', {
        regulationId: regulation.id,
        target: target.target,
        attempts,
        error: result.error?.message,
        givenUp: status === 'failed',
      });
    }
    const error = result.error === undefined ? undefined : result.error;
    await this.deps.dataSource.query(
      `UPDATE regulation_targets SET
          status = $3, attempts = $4,
          progress = coalesce($5, progress),
          cursor = CASE WHEN $6::boolean THEN $7 ELSE cursor END,
          erased = coalesce($8, erased),
          vendor_job_ids = coalesce($9, vendor_job_ids),
          last_error_code = CASE WHEN $10::boolean THEN $11 ELSE last_error_code END,
          last_error_message = CASE WHEN $10::boolean THEN $12 ELSE last_error_message END,
          next_attempt_at = now() + make_interval(secs => $13::double precision / 1000),
          updated_at = now()
        WHERE regulation_id = $1 AND target = $2`,
      [
        target.regulation_id,
        target.target,
        status,
        attempts,
        result.progress ?? null,
        result.cursor !== undefined,
        result.cursor ?? null,
        result.erased ?? null,
        result.vendorJobIds ?? null,
        error !== undefined,
        error?.code ?? null,
        error?.message ?? null,
        delay,
      ],
    );
  }

  /** Finishes a regulation whose targets are all terminal: its status, and its raw ids erased. */
  private async finishIfDone(regulationId: string): Promise<boolean> {
    const targets = (await this.deps.dataSource.query(
      'SELECT status FROM regulation_targets WHERE regulation_id = $1',
      [regulationId],
    )) as { status: TargetStatus }[];
    const overall = overallStatusOf(targets.map((t) => t.status));
    if (overall === 'RUNNING') return false;
    await this.deps.dataSource.query(
      `UPDATE regulations SET status = $2, finished_at = now(), updated_at = now(),
          sealed_subjects = NULL, sealed_identities = NULL, seal_key_id = NULL, lease_owner = NULL, lease_until = NULL
        WHERE id = $1 AND status = 'running'`,
      [regulationId, overall.toLowerCase()],
    );
    this.deps.logger.info('regulation finished', { regulationId, status: overall });
    return true;
  }
}
