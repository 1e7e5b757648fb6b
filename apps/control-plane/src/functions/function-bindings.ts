import type { DataSource, EntityManager } from 'typeorm';
import { AppError } from '@pipeline/errors';
import type { BoundFunction, TenantChangePublisher } from '@pipeline/tenancy';
import { conflict, notFound } from '../http/api-errors';
import { isUuid, requireId } from '../http/ids';
import { iso } from '../http/list-query';
import type { FunctionBindingView } from './function.dto';
import type { FunctionKind, FunctionTargetType } from './function.entity';
import { functionVersionNotFound } from './function-limits';

/** A binding's target: an integration or write key by id, or the account's warehouse. */
export type FunctionTarget =
  { type: 'integration'; id: string } | { type: 'write_key'; id: string } | { type: 'warehouse' };

const targetIdOf = (target: FunctionTarget) => (target.type === 'warehouse' ? null : target.id);

/** The target as a message names it. */
const targetName = (target: FunctionTarget) =>
  target.type === 'warehouse'
    ? "the account's warehouse"
    : `${target.type === 'integration' ? 'integration' : 'write key'} ${target.id}`;

const bindingNotFound = (target: FunctionTarget) =>
  new AppError(404, 'function_binding_not_found', `No function is bound to ${targetName(target)}`);

/** Which kind of function a target runs: destinations on their way out, sources on the way in. */
const kindFor: Record<FunctionTargetType, FunctionKind> = {
  integration: 'destination',
  warehouse: 'destination',
  write_key: 'source',
};

interface BindingRow {
  target_type: FunctionTargetType;
  target_id: string | null;
  function_id: string;
  function_version_id: string;
  version: number;
  code_hash: string;
  created_at: Date;
  updated_at: Date;
}

const viewOf = (row: BindingRow): FunctionBindingView => ({
  targetType: row.target_type,
  targetId: row.target_id,
  functionId: row.function_id,
  functionVersionId: row.function_version_id,
  version: row.version,
  codeHash: row.code_hash,
  createdAt: iso(row.created_at),
  updatedAt: iso(row.updated_at),
});

const bindingColumns = `b.target_type, b.target_id, v.function_id, b.function_version_id, v.version,
  v.code_hash, b.created_at, b.updated_at`;

/** `b.target_id` for a target, matching null for the warehouse. */
const targetClause = 'b.account_id = $1 AND b.target_type = $2 AND b.target_id IS NOT DISTINCT FROM $3';

/**
 * Which function version an integration, a write key or the account's warehouse runs
 * (docs/management-api.md#functions). A binding names a version, so publishing changes nothing
 * bound, and binding an older version is the rollback. Each change is broadcast to the
 * account's caches (tenant_changed): the delivery consumers look the tenant up again within
 * seconds.
 */
export class FunctionBindings {
  constructor(
    private readonly dataSource: DataSource,
    private readonly changes?: TenantChangePublisher,
  ) {}

  /**
   * Binds the version, replacing the target's binding. 404 for a target or version that is not
   * the account's; 422 `function_kind_mismatch` for a source function on a destination or the
   * other way round; 409 `write_key_revoked`, `resource_deleted` for a gone target.
   */
  async bind(
    accountId: string,
    target: FunctionTarget,
    functionVersionId: string,
  ): Promise<FunctionBindingView> {
    await this.checkTarget(this.dataSource.manager, accountId, target);
    if (!isUuid(functionVersionId)) throw functionVersionNotFound(functionVersionId);
    const versionId = functionVersionId.toLowerCase();
    const view = await this.dataSource.transaction(async (tx) => {
      // The function's row, shared: a delete (which locks it for update) waits for this binding
      // and then sees it, and no binding names a version of a function deleted meanwhile.
      const [version] = (await tx.query(
        `SELECT v.id, f.kind FROM function_versions v JOIN functions f ON f.id = v.function_id
         WHERE v.id = $1 AND v.account_id = $2 AND f.deleted_at IS NULL FOR SHARE OF f`,
        [versionId, accountId],
      )) as { id: string; kind: FunctionKind }[];
      if (!version) throw functionVersionNotFound(functionVersionId);
      const wanted = kindFor[target.type];
      if (version.kind !== wanted)
        throw new AppError(
          422,
          'function_kind_mismatch',
          `A ${version.kind} function cannot bind to ${targetName(target)}: it takes a ${wanted} function`,
        );
      // One statement per unique index: the warehouse's binding is keyed by the account.
      const conflictTarget =
        target.type === 'warehouse'
          ? "(account_id) WHERE target_type = 'warehouse'"
          : '(target_type, target_id) WHERE target_id IS NOT NULL';
      await tx.query(
        `INSERT INTO function_bindings (account_id, target_type, target_id, function_version_id)
         VALUES ($1, $2, $3, $4)
         ON CONFLICT ${conflictTarget} DO UPDATE
           SET function_version_id = EXCLUDED.function_version_id, updated_at = now()`,
        [accountId, target.type, targetIdOf(target), versionId],
      );
      const saved = await this.find(tx, accountId, target);
      // The row was written by this transaction: only a broken database answers without it.
      if (!saved) throw new Error('function binding not found after its upsert');
      return saved;
    });
    await this.changes?.publish({ kind: 'tenant_changed', accountId });
    return view;
  }

  /** The target's binding: 404 `function_binding_not_found` when it binds none. */
  async get(accountId: string, target: FunctionTarget): Promise<FunctionBindingView> {
    await this.checkTarget(this.dataSource.manager, accountId, target, true);
    const view = await this.find(this.dataSource.manager, accountId, target);
    if (!view) throw bindingNotFound(target);
    return view;
  }

  /** Unbinds: the target's events go as they are from then on. Idempotent. */
  async unbind(accountId: string, target: FunctionTarget): Promise<void> {
    await this.checkTarget(this.dataSource.manager, accountId, target, true);
    const [, removed] = (await this.dataSource.query(
      `DELETE FROM function_bindings b WHERE ${targetClause} RETURNING b.id`,
      [accountId, target.type, targetIdOf(target)],
    )) as [unknown[], number];
    if (removed > 0) await this.changes?.publish({ kind: 'tenant_changed', accountId });
  }

  /** What the delivery lookup carries: the version each of these integrations binds, by integration id. */
  async integrationFunctions(
    accountId: string,
    integrationIds: string[],
  ): Promise<Map<string, BoundFunction>> {
    if (integrationIds.length === 0) return new Map();
    const rows = (await this.dataSource.query(
      `SELECT b.target_id, v.function_id, v.id, v.version, v.code FROM function_bindings b
       JOIN function_versions v ON v.id = b.function_version_id
       WHERE b.account_id = $1 AND b.target_type = 'integration' AND b.target_id = ANY($2::uuid[])`,
      [accountId, integrationIds],
    )) as { target_id: string; function_id: string; id: string; version: number; code: string }[];
    return new Map(
      rows.map((row) => [
        row.target_id,
        { functionId: row.function_id, versionId: row.id, version: row.version, code: row.code },
      ]),
    );
  }

  /** The version the account's warehouse binds, or null. */
  async warehouseFunction(accountId: string): Promise<BoundFunction | null> {
    const [row] = (await this.dataSource.query(
      `SELECT v.function_id, v.id, v.version, v.code FROM function_bindings b
       JOIN function_versions v ON v.id = b.function_version_id
       WHERE b.account_id = $1 AND b.target_type = 'warehouse'`,
      [accountId],
    )) as { function_id: string; id: string; version: number; code: string }[];
    return row
      ? { functionId: row.function_id, versionId: row.id, version: row.version, code: row.code }
      : null;
  }

  private async find(
    manager: EntityManager,
    accountId: string,
    target: FunctionTarget,
  ): Promise<FunctionBindingView | null> {
    const [row] = (await manager.query(
      `SELECT ${bindingColumns} FROM function_bindings b
       JOIN function_versions v ON v.id = b.function_version_id WHERE ${targetClause}`,
      [accountId, target.type, targetIdOf(target)],
    )) as BindingRow[];
    return row ? viewOf(row) : null;
  }

  /**
   * The target is the account's (404 `not_found` otherwise). To bind, it must also be live: a
   * revoked key (409 `write_key_revoked`) or a deleted integration (409 `resource_deleted`)
   * sends nothing more; reading or removing a binding of one is allowed.
   */
  private async checkTarget(
    manager: EntityManager,
    accountId: string,
    target: FunctionTarget,
    goneAllowed = false,
  ): Promise<void> {
    if (target.type === 'warehouse') return;
    if (target.type === 'integration') {
      const [row] = (await manager.query(
        'SELECT id, state FROM integrations WHERE id = $1 AND account_id = $2',
        [requireId('integration', target.id), accountId],
      )) as { id: string; state: string }[];
      if (!row) throw notFound('integration', target.id);
      if (!goneAllowed && row.state === 'deleted')
        throw conflict('resource_deleted', `Integration ${row.id} is deleted`);
      return;
    }
    const [row] = (await manager.query(
      'SELECT id, revoked_at FROM write_keys WHERE id = $1 AND account_id = $2',
      [requireId('write key', target.id), accountId],
    )) as { id: string; revoked_at: Date | null }[];
    if (!row) throw notFound('write key', target.id);
    if (!goneAllowed && row.revoked_at) throw conflict('write_key_revoked', `Write key ${row.id} is revoked`);
  }
}
