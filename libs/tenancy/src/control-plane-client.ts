import type { Logger } from '@pipeline/logger';
import type { TrackingPlan } from '@pipeline/tracking-plans';
import { ControlPlaneUnavailable, lookupOutcome, tenantOfAnswer } from './control-plane-answer';
import { wellFormedRecord, type RegulatedSubjectsRecord } from './regulated-subjects';
import type { TenantRecord, WriteKeyRecord } from './tenant-record';
import type { ResolvedWarehouse } from './warehouse-location';

export { ControlPlaneUnavailable } from './control-plane-answer';

/** A warehouse's state as its consumer reports it. */
export type ReportedWarehouseStatus = 'active' | 'unavailable' | 'misconfigured';

/**
 * The control plane refused a warehouse question for what was asked (an unknown account or
 * warehouse): asking again does not help. `code` is the answer's error code.
 */
export class WarehouseQuestionRefused extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
  ) {
    super(`the control plane answered ${status} ${code}`);
  }
}

/** A published tracking plan version as the control plane keeps it (immutable). */
export interface TrackingPlanVersionRecord {
  planId: string;
  version: number;
  /** planHash of the plan. */
  hash: string;
  plan: TrackingPlan;
}

/**
 * The control plane has no such plan version for that account (404
 * `tracking_plan_version_not_found`): asking again does not make it exist.
 */
export class TrackingPlanVersionNotFound extends Error {
  constructor(
    readonly planId: string,
    readonly version: number,
  ) {
    super(`tracking plan ${planId} has no version ${version}`);
    this.name = 'TrackingPlanVersionNotFound';
  }
}

/**
 * The control plane's internal tenant lookups: by write key for ingestion (the only write-key
 * source in hosted mode), by write key id for the delivery consumers (the outbox carries the
 * id, never the key or a destination's secrets).
 */
export class ControlPlaneClient {
  constructor(
    private readonly baseUrl: string,
    private readonly serviceToken: string,
    private readonly logger: Logger,
    private readonly timeoutMs = 2000,
  ) {}

  /**
   * What ingestion needs of a key (no destination credentials), null for an unknown key;
   * throws ControlPlaneUnavailable when it cannot be asked.
   */
  resolve(writeKey: string): Promise<WriteKeyRecord | null> {
    return this.post<WriteKeyRecord>('/internal/v1/write-keys/resolve', { writeKey });
  }

  /** The tenant of a write key by its id, revoked or not: what it accepted is still delivered. */
  lookup(writeKeyId: string): Promise<TenantRecord | null> {
    return this.post<TenantRecord>('/internal/v1/write-keys/lookup', { writeKeyId });
  }

  /**
   * An account's regulated subjects (keyed hashes, never ids); an account with none answers an
   * empty list. Throws ControlPlaneUnavailable when it cannot be asked: a caller then holds the
   * events rather than deliver what may be regulated.
   */
  async regulatedSubjects(accountId: string): Promise<RegulatedSubjectsRecord> {
    const record = await this.post<RegulatedSubjectsRecord>('/internal/v1/regulated-subjects', { accountId });
    if (!record || !wellFormedRecord(record))
      throw new ControlPlaneUnavailable('the control plane answered without regulated subjects');
    return record;
  }

  /**
   * A published version of one of the account's tracking plans, for ingestion's plan door.
   * Throws TrackingPlanVersionNotFound when the account has no such plan version (a 404), and
   * ControlPlaneUnavailable for anything else that is not the version (a timeout, a 5xx, our
   * token refused, an answer without a plan).
   */
  async trackingPlanVersion(
    accountId: string,
    planId: string,
    version: number,
  ): Promise<TrackingPlanVersionRecord> {
    const response = await this.send('/internal/v1/tracking-plan-versions', { accountId, planId, version });
    if (response.status === 404) {
      await response.body?.cancel();
      throw new TrackingPlanVersionNotFound(planId, version);
    }
    if (!response.ok) {
      await response.body?.cancel();
      if (response.status === 401 || response.status === 403)
        this.logger.error('the control plane refused INTERNAL_SERVICE_TOKEN');
      throw new ControlPlaneUnavailable(`control plane answered ${response.status}`);
    }
    const data = (
      (await response.json().catch(() => null)) as { data?: Partial<TrackingPlanVersionRecord> } | null
    )?.data;
    // The answer is for what was asked, or it is not an answer: a version cached under the wrong
    // key would hold every later event to another plan.
    if (
      data?.planId !== planId ||
      data.version !== version ||
      typeof data.hash !== 'string' ||
      typeof data.plan !== 'object' ||
      data.plan === null ||
      !Array.isArray((data.plan as { rules?: unknown }).rules)
    )
      throw new ControlPlaneUnavailable('the control plane answered without the tracking plan version');
    return data as TrackingPlanVersionRecord;
  }

  /**
   * Where an account's warehouse rows go, with the connection (its password included): the
   * warehouse consumer's token only. Throws WarehouseQuestionRefused for an unknown account,
   * ControlPlaneUnavailable when it cannot be asked (or refused our token).
   */
  async resolveWarehouse(accountId: string): Promise<ResolvedWarehouse> {
    const response = await this.send('/internal/v1/warehouses/resolve', { accountId });
    await this.refusal(response);
    const data = ((await response.json()) as { data?: Partial<ResolvedWarehouse> } | null)?.data;
    if (typeof data?.placement?.warehouseId !== 'string' || typeof data.connection?.host !== 'string')
      throw new ControlPlaneUnavailable('the control plane answered without a warehouse');
    return data as ResolvedWarehouse;
  }

  /** Records what the consumer met at a warehouse (its status and a short detail). */
  async reportWarehouseStatus(
    warehouseId: string,
    status: ReportedWarehouseStatus,
    detail?: string,
  ): Promise<void> {
    const response = await this.send(`/internal/v1/warehouses/${encodeURIComponent(warehouseId)}/status`, {
      status,
      ...(detail === undefined ? {} : { detail }),
    });
    await this.refusal(response);
    await response.body?.cancel();
  }

  /** Throws what a non-2xx answer to a warehouse question means. */
  private async refusal(response: Response): Promise<void> {
    if (response.ok) return;
    const outcome = lookupOutcome(response.status);
    if (outcome === 'unknown') {
      const body = (await response.json().catch(() => null)) as { code?: unknown } | null;
      throw new WarehouseQuestionRefused(
        response.status,
        typeof body?.code === 'string' ? body.code : 'unknown',
      );
    }
    await response.body?.cancel();
    if (outcome === 'token_refused') this.logger.error('the control plane refused INTERNAL_SERVICE_TOKEN');
    throw new ControlPlaneUnavailable(`control plane answered ${response.status}`);
  }

  private async send(path: string, body: Record<string, string | number>): Promise<Response> {
    try {
      return await fetch(new URL(path, this.baseUrl), {
        method: 'POST',
        headers: { authorization: `Bearer ${this.serviceToken}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (error) {
      throw new ControlPlaneUnavailable((error as Error).message);
    }
  }

  private async post<T>(path: string, body: Record<string, string>): Promise<T | null> {
    const response = await this.send(path, body);
    const outcome = lookupOutcome(response.status);
    if (outcome === 'tenant') return tenantOfAnswer<T>(await response.json());
    if (outcome === 'unknown') return null;
    if (outcome === 'token_refused') this.logger.error('the control plane refused INTERNAL_SERVICE_TOKEN');
    throw new ControlPlaneUnavailable(`control plane answered ${response.status}`);
  }
}
