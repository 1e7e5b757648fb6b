import type { DataSource, EntityManager } from 'typeorm';
import { AppError } from '@pipeline/errors';
import type { TenantChangePublisher, TrackingPlanBinding } from '@pipeline/tenancy';
import {
  checkPolicy,
  WAREHOUSE_DESTINATION,
  type PlanPolicy,
  type PolicyProblem,
} from '@pipeline/tracking-plans';
import { conflict, notFound, unprocessable } from '../http/api-errors';
import { isUuid, requireId } from '../http/ids';
import { iso } from '../http/list-query';
import { WriteKeyEntity } from '../write-keys/write-key.entity';
import type { BindTrackingPlanBody, TrackingPlanBindingView } from './tracking-plan.dto';
import { TrackingPlanBindingEntity } from './tracking-plan.entity';
import { versionNotFound } from './tracking-plan.service';

const bindingNotFound = (writeKeyId: string) =>
  new AppError(404, 'tracking_plan_binding_not_found', `Write key ${writeKeyId} binds no tracking plan`);

const escapeToken = (token: string) => token.replace(/~/g, '~0').replace(/\//g, '~1');

/**
 * The policy's problems: checkPolicy's, and each destination that is neither `warehouse` nor an
 * integration of this account (an override for something that cannot receive the key's events
 * would silently do nothing).
 */
async function policyProblems(
  manager: EntityManager,
  accountId: string,
  policy: unknown,
): Promise<PolicyProblem[]> {
  const problems = checkPolicy(policy);
  if (problems.length > 0) return problems;
  const destinations = Object.keys((policy as PlanPolicy).destinations ?? {}).filter(
    (name) => name !== WAREHOUSE_DESTINATION,
  );
  const ids = destinations.filter(isUuid).map((id) => id.toLowerCase());
  const known = new Set(
    ids.length === 0
      ? []
      : (
          (await manager.query(
            'SELECT id FROM integrations WHERE account_id = $1 AND id = ANY($2::uuid[]) AND deleted_at IS NULL',
            [accountId, ids],
          )) as { id: string }[]
        ).map((row) => row.id),
  );
  return destinations
    .filter((name) => !(isUuid(name) && known.has(name.toLowerCase())))
    .map((name) => ({
      path: `/destinations/${escapeToken(name)}`,
      message: `is neither ${WAREHOUSE_DESTINATION} nor an integration of this account`,
    }));
}

function viewOf(binding: TrackingPlanBindingEntity, version: number): TrackingPlanBindingView {
  return {
    writeKeyId: binding.writeKeyId,
    planId: binding.planId,
    binding: binding.pinnedVersion === null ? 'latest' : 'pinned',
    version,
    policy: binding.policy,
    updatedAt: iso(binding.updatedAt),
  };
}

interface ResolvedRow {
  plan_id: string;
  pinned_version: number | null;
  policy: PlanPolicy;
  latest: number | null;
}

/**
 * Which plan a write key binds, at `latest` or a pinned version, with its policy. Each change
 * is broadcast to the account's caches (tenant_changed), so ingestion holds the key to the new
 * binding within seconds.
 */
export class TrackingPlanBindings {
  constructor(
    private readonly dataSource: DataSource,
    private readonly changes?: TenantChangePublisher,
  ) {}

  /**
   * Binds the plan, replacing any binding of the key. 409 `tracking_plan_not_published` for a
   * plan without a version; 404 `tracking_plan_version_not_found` for a pin to none; 422
   * `invalid_policy` listing the policy's problems.
   */
  async bind(
    accountId: string,
    writeKeyId: string,
    body: BindTrackingPlanBody,
  ): Promise<TrackingPlanBindingView> {
    const key = await this.writeKey(accountId, writeKeyId);
    if (key.revokedAt) throw conflict('write_key_revoked', `Write key ${key.id} is revoked`);
    const planId = requireId('tracking plan', body.planId);
    const saved = await this.dataSource.transaction(async (tx) => {
      // The plan's row, shared: a delete of the plan (which locks it for update) waits for this
      // binding and then sees it, and this binding never names a plan deleted meanwhile.
      const [plan] = (await tx.query(
        'SELECT id FROM tracking_plans WHERE id = $1 AND account_id = $2 FOR SHARE',
        [planId, accountId],
      )) as { id: string }[];
      if (!plan) throw notFound('tracking plan', body.planId);
      const problems = await policyProblems(tx, accountId, body.policy);
      if (problems.length > 0)
        throw unprocessable(
          'invalid_policy',
          `The policy is not valid: ${problems.length} problem(s); each is named in errors[] with a JSON Pointer into the policy`,
          problems,
        );
      const [{ latest }] = (await tx.query(
        'SELECT max(version) AS latest FROM tracking_plan_versions WHERE plan_id = $1',
        [planId],
      )) as [{ latest: number | null }];
      if (latest === null)
        throw conflict(
          'tracking_plan_not_published',
          `Tracking plan ${planId} has no published version yet; publish it first`,
        );
      const pinned = body.version === 'latest' ? null : body.version;
      if (pinned !== null && pinned > latest) throw versionNotFound(planId, pinned);
      // An upsert: two binds of one key at once both succeed, the later one standing.
      const [row] = (await tx.query(
        `INSERT INTO tracking_plan_bindings (write_key_id, account_id, plan_id, pinned_version, policy, updated_at)
         VALUES ($1, $2, $3, $4, $5, now())
         ON CONFLICT (write_key_id) DO UPDATE SET plan_id = EXCLUDED.plan_id,
           pinned_version = EXCLUDED.pinned_version, policy = EXCLUDED.policy, updated_at = now()
         RETURNING updated_at`,
        [key.id, accountId, planId, pinned, JSON.stringify(body.policy)],
      )) as [{ updated_at: Date }];
      const binding = Object.assign(new TrackingPlanBindingEntity(), {
        writeKeyId: key.id,
        accountId,
        planId,
        pinnedVersion: pinned,
        policy: body.policy as unknown as PlanPolicy,
        updatedAt: row.updated_at,
      });
      return viewOf(binding, pinned ?? latest);
    });
    await this.changes?.publish({ kind: 'tenant_changed', accountId });
    return saved;
  }

  async get(accountId: string, writeKeyId: string): Promise<TrackingPlanBindingView> {
    const key = await this.writeKey(accountId, writeKeyId);
    const binding = await this.dataSource
      .getRepository(TrackingPlanBindingEntity)
      .findOneBy({ writeKeyId: key.id, accountId });
    const resolved = await this.bindingOf(key.id);
    if (!binding || !resolved) throw bindingNotFound(key.id);
    return viewOf(binding, resolved.version);
  }

  /** Removes the key's binding: its events are held to no plan. Idempotent. */
  async unbind(accountId: string, writeKeyId: string): Promise<void> {
    const key = await this.writeKey(accountId, writeKeyId);
    const removed = await this.dataSource
      .getRepository(TrackingPlanBindingEntity)
      .delete({ writeKeyId: key.id, accountId });
    if (removed.affected) await this.changes?.publish({ kind: 'tenant_changed', accountId });
  }

  /**
   * What a key's tenant record carries (WriteKeyResolver): the binding with the version its
   * events are held to now, `latest` resolved to the newest published version.
   */
  async bindingOf(writeKeyId: string): Promise<TrackingPlanBinding | null> {
    const [row] = (await this.dataSource.query(
      `SELECT b.plan_id, b.pinned_version, b.policy,
              (SELECT max(v.version) FROM tracking_plan_versions v WHERE v.plan_id = b.plan_id) AS latest
       FROM tracking_plan_bindings b WHERE b.write_key_id = $1`,
      [writeKeyId],
    )) as ResolvedRow[];
    const version = row?.pinned_version ?? row?.latest;
    if (!row || version === null || version === undefined) return null;
    return {
      planId: row.plan_id,
      binding: row.pinned_version === null ? 'latest' : 'pinned',
      version,
      policy: row.policy,
    };
  }

  private async writeKey(accountId: string, writeKeyId: string): Promise<WriteKeyEntity> {
    const key = await this.dataSource
      .getRepository(WriteKeyEntity)
      .findOneBy({ id: requireId('write key', writeKeyId), accountId });
    if (!key) throw notFound('write key', writeKeyId);
    return key;
  }
}
