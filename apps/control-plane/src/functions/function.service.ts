import { createHash } from 'node:crypto';
import type { DataSource, EntityManager } from 'typeorm';
import type { TenantChangePublisher } from '@pipeline/tenancy';
import { conflict, invalidField } from '../http/api-errors';
import { isUuid, requireId } from '../http/ids';
import { iso } from '../http/list-query';
import { listResponse, type ListResponse, type PageRequest } from '../http/pagination';
import type {
  CreateFunctionBody,
  FunctionSummary,
  FunctionVersionSummary,
  FunctionVersionView,
  FunctionView,
  UpdateFunctionBody,
} from './function.dto';
import type { FunctionKind } from './function.entity';
import {
  checkCode,
  checkText,
  functionDescriptionMaxLength,
  functionNameMaxLength,
  functionNotFound,
  functionVersionNotFound,
} from './function-limits';

/** sha256 of the code's UTF-8, lower-case hex: what a version's `codeHash` is. */
export const codeHash = (code: string) => createHash('sha256').update(code, 'utf8').digest('hex');

const functionKinds: readonly FunctionKind[] = ['destination', 'source'];

interface FunctionRow {
  id: string;
  name: string;
  description: string;
  kind: FunctionKind;
  draft_code: string;
  created_at: Date;
  updated_at: Date;
  latest_version: number | null;
  latest_version_id: string | null;
  latest_hash: string | null;
  bound: number;
}

interface VersionRow {
  id: string;
  function_id: string;
  version: number;
  code_hash: string;
  created_at: Date;
}

// The draft is read whole even for lists: its hash is computed here, not stored, so no column
// can disagree with the code it describes.
const columns = `f.id, f.name, f.description, f.kind, f.draft_code, f.created_at, f.updated_at,
  latest.version AS latest_version, latest.id AS latest_version_id, latest.code_hash AS latest_hash,
  (SELECT count(*)::int FROM function_bindings b JOIN function_versions bv ON bv.id = b.function_version_id
   WHERE bv.function_id = f.id) AS bound`;
const latestJoin = `LEFT JOIN LATERAL (
    SELECT v.id, v.version, v.code_hash FROM function_versions v WHERE v.function_id = f.id
    ORDER BY v.version DESC LIMIT 1) latest ON true`;

function summaryOf(row: FunctionRow): FunctionSummary {
  const draftCodeHash = codeHash(row.draft_code);
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    kind: row.kind,
    draftCodeHash,
    latestVersion: row.latest_version,
    latestVersionId: row.latest_version_id,
    draftChanged: row.latest_hash !== draftCodeHash,
    boundTargets: row.bound,
    createdAt: iso(row.created_at),
    updatedAt: iso(row.updated_at),
  };
}

const versionSummaryOf = (row: VersionRow): FunctionVersionSummary => ({
  id: row.id,
  functionId: row.function_id,
  version: row.version,
  codeHash: row.code_hash,
  createdAt: iso(row.created_at),
});

const isUniqueViolation = (error: unknown) =>
  typeof error === 'object' && error !== null && (error as { code?: unknown }).code === '23505';

const nameTaken = (name: string) =>
  conflict('function_name_taken', `The account already has a function named ${JSON.stringify(name)}`);

/**
 * Functions of the management API (docs/management-api.md#functions): the draft edited in
 * place, and publishing that freezes it as version n+1 with its code's sha256. Writes of one
 * function run under its row lock, so versions are numbered without gaps or races.
 */
export class FunctionService {
  constructor(
    private readonly dataSource: DataSource,
    private readonly changes?: TenantChangePublisher,
  ) {}

  async create(accountId: string, body: CreateFunctionBody): Promise<FunctionView> {
    const name = checkText(body.name, 'body.name', functionNameMaxLength, false);
    const description = checkText(
      body.description ?? '',
      'body.description',
      functionDescriptionMaxLength,
      true,
    );
    if (!functionKinds.includes(body.kind)) throw invalidField('body.kind', 'must be destination or source');
    const code = checkCode(body.code, 'body.code');
    let id: string;
    try {
      const [row] = (await this.dataSource.query(
        `INSERT INTO functions (account_id, name, description, kind, draft_code)
         VALUES ($1, $2, $3, $4, $5) RETURNING id`,
        [accountId, name, description, body.kind, code],
      )) as [{ id: string }];
      id = row.id;
    } catch (error) {
      if (isUniqueViolation(error)) throw nameTaken(name);
      throw error;
    }
    return this.get(accountId, id);
  }

  async list(accountId: string, page: PageRequest): Promise<ListResponse<FunctionSummary>> {
    const rows = (await this.dataSource.query(
      `SELECT ${columns} FROM functions f ${latestJoin}
       WHERE f.account_id = $1 AND f.deleted_at IS NULL
       ORDER BY f.created_at DESC, f.id DESC LIMIT $2 OFFSET $3`,
      [accountId, page.limit, page.offset],
    )) as FunctionRow[];
    const [{ n }] = (await this.dataSource.query(
      'SELECT count(*)::int AS n FROM functions WHERE account_id = $1 AND deleted_at IS NULL',
      [accountId],
    )) as [{ n: number }];
    return listResponse(rows.map(summaryOf), n, page);
  }

  async get(accountId: string, functionId: string): Promise<FunctionView> {
    const id = requireId('function', functionId);
    const [row] = (await this.dataSource.query(
      `SELECT ${columns} FROM functions f ${latestJoin}
       WHERE f.account_id = $1 AND f.id = $2 AND f.deleted_at IS NULL`,
      [accountId, id],
    )) as FunctionRow[];
    if (!row) throw functionNotFound(functionId);
    return { ...summaryOf(row), draftCode: row.draft_code };
  }

  /** Renames, redescribes or replaces the draft; published versions never change. */
  async update(accountId: string, functionId: string, body: UpdateFunctionBody): Promise<FunctionView> {
    const sets: string[] = [];
    const values: unknown[] = [];
    const set = (column: string, value: string) => {
      values.push(value);
      sets.push(`${column} = $${values.length + 2}`);
    };
    if (body.name !== undefined) set('name', checkText(body.name, 'body.name', functionNameMaxLength, false));
    if (body.description !== undefined)
      set('description', checkText(body.description, 'body.description', functionDescriptionMaxLength, true));
    if (body.code !== undefined) set('draft_code', checkCode(body.code, 'body.code'));
    const id = requireId('function', functionId);
    try {
      const rows = (await this.dataSource.query(
        `UPDATE functions SET ${[...sets, 'updated_at = now()'].join(', ')}
         WHERE account_id = $1 AND id = $2 AND deleted_at IS NULL RETURNING id`,
        [accountId, id, ...values],
      )) as [{ id: string }[], number];
      if (rows[1] === 0) throw functionNotFound(functionId);
    } catch (error) {
      if (isUniqueViolation(error)) throw nameTaken(body.name ?? '');
      throw error;
    }
    return this.get(accountId, id);
  }

  /**
   * Freezes the draft as the next version. 409 `draft_unchanged` when it equals the newest
   * version: binding that version again is the way back to it. Nothing bound changes.
   */
  async publish(accountId: string, functionId: string): Promise<FunctionVersionView> {
    return this.dataSource.transaction(async (tx) => {
      const fn = await this.lockFunction(tx, accountId, functionId);
      const [latest] = (await tx.query(
        'SELECT version, code_hash FROM function_versions WHERE function_id = $1 ORDER BY version DESC LIMIT 1',
        [fn.id],
      )) as { version: number; code_hash: string }[];
      const hash = codeHash(fn.draft_code);
      if (latest && latest.code_hash === hash)
        throw conflict(
          'draft_unchanged',
          `The draft equals version ${latest.version}: there is nothing new to publish`,
        );
      const [row] = (await tx.query(
        `INSERT INTO function_versions (function_id, account_id, version, code, code_hash)
         VALUES ($1, $2, $3, $4, $5) RETURNING id, function_id, version, code_hash, created_at, code`,
        [fn.id, accountId, (latest?.version ?? 0) + 1, fn.draft_code, hash],
      )) as [VersionRow & { code: string }];
      return { ...versionSummaryOf(row), code: row.code };
    });
  }

  /** Published versions, newest first, without their code. */
  async versions(
    accountId: string,
    functionId: string,
    page: PageRequest,
  ): Promise<ListResponse<FunctionVersionSummary>> {
    const fn = await this.get(accountId, functionId);
    const rows = (await this.dataSource.query(
      `SELECT id, function_id, version, code_hash, created_at FROM function_versions
       WHERE function_id = $1 ORDER BY version DESC LIMIT $2 OFFSET $3`,
      [fn.id, page.limit, page.offset],
    )) as VersionRow[];
    const [{ n }] = (await this.dataSource.query(
      'SELECT count(*)::int AS n FROM function_versions WHERE function_id = $1',
      [fn.id],
    )) as [{ n: number }];
    return listResponse(rows.map(versionSummaryOf), n, page);
  }

  /** One version with its code: 404 `function_version_not_found` for none of this function. */
  async version(accountId: string, functionId: string, versionId: string): Promise<FunctionVersionView> {
    const fn = await this.get(accountId, functionId);
    if (!isUuid(versionId)) throw functionVersionNotFound(versionId);
    const [row] = (await this.dataSource.query(
      `SELECT id, function_id, version, code_hash, created_at, code FROM function_versions
       WHERE function_id = $1 AND id = $2`,
      [fn.id, versionId.toLowerCase()],
    )) as (VersionRow & { code: string })[];
    if (!row) throw functionVersionNotFound(versionId);
    return { ...versionSummaryOf(row), code: row.code };
  }

  /**
   * Deletes a function (its row and versions stay, marked deleted, since dead letters name the
   * versions; its name is free again). 409 `function_bound` while a target binds one of its
   * versions; a binding of a deleted integration does not count and goes with the function.
   */
  async remove(accountId: string, functionId: string): Promise<void> {
    await this.dataSource.transaction(async (tx) => {
      const fn = await this.lockFunction(tx, accountId, functionId);
      await tx.query(
        `DELETE FROM function_bindings b USING function_versions v, integrations i
         WHERE v.id = b.function_version_id AND v.function_id = $1
           AND b.target_type = 'integration' AND i.id = b.target_id AND i.state = 'deleted'`,
        [fn.id],
      );
      const [{ n }] = (await tx.query(
        `SELECT count(*)::int AS n FROM function_bindings b
         JOIN function_versions v ON v.id = b.function_version_id WHERE v.function_id = $1`,
        [fn.id],
      )) as [{ n: number }];
      if (n > 0)
        throw conflict(
          'function_bound',
          `${n} target(s) bind a version of function ${fn.id}; unbind them first`,
        );
      await tx.query('UPDATE functions SET deleted_at = now(), updated_at = now() WHERE id = $1', [fn.id]);
    });
    await this.changes?.publish({ kind: 'tenant_changed', accountId });
  }

  /**
   * The code a test runs: the draft, or a published version of this function (404
   * `function_version_not_found` otherwise).
   */
  async codeFor(
    accountId: string,
    functionId: string,
    versionId: string | undefined,
  ): Promise<{ kind: FunctionKind; versionId: string | null; code: string }> {
    const fn = await this.get(accountId, functionId);
    if (versionId === undefined) return { kind: fn.kind, versionId: null, code: fn.draftCode };
    const version = await this.version(accountId, functionId, versionId);
    return { kind: fn.kind, versionId: version.id, code: version.code };
  }

  /** The function's row, locked for this transaction: one publish or delete of it at a time. */
  private async lockFunction(
    tx: EntityManager,
    accountId: string,
    functionId: string,
  ): Promise<{ id: string; draft_code: string }> {
    const [row] = (await tx.query(
      `SELECT id, draft_code FROM functions WHERE account_id = $1 AND id = $2 AND deleted_at IS NULL FOR UPDATE`,
      [accountId, requireId('function', functionId)],
    )) as { id: string; draft_code: string }[];
    if (!row) throw functionNotFound(functionId);
    return row;
  }
}
