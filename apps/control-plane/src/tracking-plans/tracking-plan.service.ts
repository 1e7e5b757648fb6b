import type { DataSource, EntityManager } from 'typeorm';
import { AppError } from '@pipeline/errors';
import type { TenantChangePublisher } from '@pipeline/tenancy';
import {
  canonicalJson,
  checkPlan,
  diffPlans,
  exportSegmentRules,
  importRudderCliProject,
  importSegmentRules,
  planHash,
  type FormatProblem,
  type FormatResult,
  type TrackingPlan,
} from '@pipeline/tracking-plans';
import { conflict, invalidField, notFound, unprocessable } from '../http/api-errors';
import { isUuid, requireId } from '../http/ids';
import { iso } from '../http/list-query';
import { listResponse, type ListResponse, type PageRequest } from '../http/pagination';
import type {
  CreateTrackingPlanBody,
  ImportTrackingPlanBody,
  PlanDocumentInput,
  SegmentExportAnswer,
  TrackingPlanDiff,
  TrackingPlanSummary,
  TrackingPlanVersionRecord,
  TrackingPlanVersionSummary,
  TrackingPlanVersionView,
  TrackingPlanView,
  UpdateTrackingPlanBody,
} from './tracking-plan.dto';
import { TrackingPlanEntity, TrackingPlanVersionEntity } from './tracking-plan.entity';
import {
  defaultTrackingPlanLimits,
  planDescriptionMaxLength,
  planNameMaxLength,
  trackingPlanLimitReached,
  type TrackingPlanLimits,
} from './tracking-plan-limits';

const planNotFound = (id: string) => notFound('tracking plan', id);

export const versionNotFound = (planId: string, version: number | string) =>
  new AppError(
    404,
    'tracking_plan_version_not_found',
    `Tracking plan ${planId} has no published version ${version}`,
  );

const utf8Bytes = (text: string) => Buffer.byteLength(text, 'utf8');

/** U+0000, or a surrogate without its pair (String.prototype.isWellFormed is ES2024, past our lib). */
// eslint-disable-next-line no-control-regex -- U+0000 is exactly what must be found.
const unstorable = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * A name or description as stored: exactly as given. PostgreSQL's text holds neither U+0000 nor
 * an unpaired surrogate (the driver would turn it into U+FFFD), so those are refused rather
 * than stored changed.
 */
function checkText(value: string, path: string, maxLength: number, blankAllowed: boolean): string {
  if (!blankAllowed && value.trim() === '') throw invalidField(path, 'must not be blank');
  if (value.length > maxLength) throw invalidField(path, `must be at most ${maxLength} characters`);
  if (unstorable.test(value)) throw invalidField(path, 'must not contain U+0000 or an unpaired surrogate');
  return value;
}

/** The plan checkPlan accepts, or 422 `invalid_tracking_plan` listing every problem. */
export function acceptedPlan(input: unknown): TrackingPlan {
  const checked = checkPlan(input);
  if (!checked.ok)
    throw unprocessable(
      'invalid_tracking_plan',
      `The tracking plan is not valid: ${checked.problems.length} problem(s); each is named in errors[] with a JSON Pointer into the plan`,
      checked.problems.map(({ path, code, message }) => ({ path, code, message })),
    );
  return checked.plan;
}

function importProblems(problems: FormatProblem[]): AppError {
  return unprocessable(
    'invalid_import',
    `The content cannot be imported: ${problems.length} problem(s); each is named in errors[] with a JSON Pointer into the content`,
    problems.map(({ path, code, message }) => ({ path, code, message })),
  );
}

/** The imported plan of a Segment or Rudder CLI export, or 422 `invalid_import`. */
function importedPlan(body: ImportTrackingPlanBody): TrackingPlan {
  let result: FormatResult<TrackingPlan>;
  if (body.format === 'segment') {
    let input: unknown = body.content;
    if (typeof input === 'string') {
      try {
        input = JSON.parse(input);
      } catch {
        throw importProblems([{ code: 'invalid_input', path: '', message: 'is not JSON' }]);
      }
    }
    result = importSegmentRules(input);
  } else {
    const { content } = body;
    if (typeof content !== 'string' && !Array.isArray(content))
      throw importProblems([
        { code: 'invalid_input', path: '', message: 'must be the YAML files as strings (or one string)' },
      ]);
    result = importRudderCliProject(typeof content === 'string' ? [content] : content);
  }
  if (!result.ok) throw importProblems(result.problems);
  return result.value;
}

interface PlanRow {
  id: string;
  name: string;
  description: string;
  draft_hash: string;
  created_at: Date;
  updated_at: Date;
  latest_version: number | null;
  latest_hash: string | null;
  bound: number;
}

const summaryColumns = `p.id, p.name, p.description, p.draft_hash, p.created_at, p.updated_at,
  latest.version AS latest_version, latest.hash AS latest_hash,
  (SELECT count(*)::int FROM tracking_plan_bindings b WHERE b.plan_id = p.id) AS bound`;
const latestJoin = `LEFT JOIN LATERAL (
    SELECT v.version, v.hash FROM tracking_plan_versions v WHERE v.plan_id = p.id
    ORDER BY v.version DESC LIMIT 1) latest ON true`;

function summaryOf(row: PlanRow): TrackingPlanSummary {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    latestVersion: row.latest_version,
    draftHash: row.draft_hash,
    draftChanged: row.latest_hash !== row.draft_hash,
    boundWriteKeys: row.bound,
    createdAt: iso(row.created_at),
    updatedAt: iso(row.updated_at),
  };
}

function versionSummaryOf(row: TrackingPlanVersionEntity): TrackingPlanVersionSummary {
  return {
    planId: row.planId,
    version: row.version,
    hash: row.hash,
    publishedAt: iso(row.publishedAt),
    publishedByApiKeyId: row.publishedByApiKeyId,
  };
}

/** A stored document: written by canonicalJson from a plan checkPlan accepted. */
const parsePlan = (document: string) => JSON.parse(document) as TrackingPlan;

/**
 * Tracking plans of the management API: the draft edited in place, publishing that freezes it
 * as version n+1 (its canonical JSON and hash, never changed again), the diff between versions,
 * and imports and exports. Every write of an account runs under one advisory lock of its plans,
 * so the caps are counted without races and versions are numbered without gaps.
 */
export class TrackingPlanService {
  constructor(
    private readonly dataSource: DataSource,
    private readonly changes?: TenantChangePublisher,
    readonly limits: TrackingPlanLimits = defaultTrackingPlanLimits,
  ) {}

  async create(accountId: string, body: CreateTrackingPlanBody): Promise<TrackingPlanView> {
    const plan = acceptedPlan(body.plan ?? { rules: [] });
    return this.insert(accountId, body, plan);
  }

  /** A plan whose draft is a Segment or RudderStack plan brought over (not published). */
  async importPlan(accountId: string, body: ImportTrackingPlanBody): Promise<TrackingPlanView> {
    checkText(body.name, 'body.name', planNameMaxLength, false);
    return this.insert(accountId, body, acceptedPlan(importedPlan(body)));
  }

  private async insert(
    accountId: string,
    body: { name: string; description?: string },
    plan: TrackingPlan,
  ): Promise<TrackingPlanView> {
    const name = checkText(body.name, 'body.name', planNameMaxLength, false);
    const description = checkText(body.description ?? '', 'body.description', planDescriptionMaxLength, true);
    const draft = canonicalJson(plan);
    const id = await this.dataSource.transaction(async (tx) => {
      await this.lockAccount(tx, accountId);
      const [{ n }] = (await tx.query('SELECT count(*)::int AS n FROM tracking_plans WHERE account_id = $1', [
        accountId,
      ])) as [{ n: number }];
      if (n >= this.limits.plansPerAccount)
        throw trackingPlanLimitReached('tracking_plans', this.limits.plansPerAccount);
      await this.reserveBytes(tx, accountId, utf8Bytes(draft));
      const saved = await tx.getRepository(TrackingPlanEntity).save(
        tx.getRepository(TrackingPlanEntity).create({
          accountId,
          name,
          description,
          draft,
          draftHash: planHash(plan),
        }),
      );
      return saved.id;
    });
    return this.get(accountId, id);
  }

  async list(accountId: string, page: PageRequest): Promise<ListResponse<TrackingPlanSummary>> {
    const rows = (await this.dataSource.query(
      `SELECT ${summaryColumns} FROM tracking_plans p ${latestJoin}
       WHERE p.account_id = $1 ORDER BY p.created_at DESC, p.id DESC LIMIT $2 OFFSET $3`,
      [accountId, page.limit, page.offset],
    )) as PlanRow[];
    const [{ n }] = (await this.dataSource.query(
      'SELECT count(*)::int AS n FROM tracking_plans WHERE account_id = $1',
      [accountId],
    )) as [{ n: number }];
    return listResponse(rows.map(summaryOf), n, page);
  }

  async get(accountId: string, planId: string): Promise<TrackingPlanView> {
    const id = requireId('tracking plan', planId);
    const [row] = (await this.dataSource.query(
      `SELECT ${summaryColumns}, p.draft FROM tracking_plans p ${latestJoin}
       WHERE p.account_id = $1 AND p.id = $2`,
      [accountId, id],
    )) as (PlanRow & { draft: string })[];
    if (!row) throw planNotFound(planId);
    return { ...summaryOf(row), draft: parsePlan(row.draft) };
  }

  async update(accountId: string, planId: string, body: UpdateTrackingPlanBody): Promise<TrackingPlanView> {
    const plan = await this.find(this.dataSource.manager, accountId, planId);
    if (body.name !== undefined) plan.name = checkText(body.name, 'body.name', planNameMaxLength, false);
    if (body.description !== undefined)
      plan.description = checkText(body.description, 'body.description', planDescriptionMaxLength, true);
    await this.dataSource.getRepository(TrackingPlanEntity).save(plan);
    return this.get(accountId, plan.id);
  }

  /** Replaces the draft with a plan checkPlan accepts; published versions are untouched. */
  async putDraft(accountId: string, planId: string, input: PlanDocumentInput): Promise<TrackingPlanView> {
    const plan = acceptedPlan(input);
    const draft = canonicalJson(plan);
    await this.dataSource.transaction(async (tx) => {
      await this.lockAccount(tx, accountId);
      const row = await this.find(tx, accountId, planId);
      await this.reserveBytes(tx, accountId, utf8Bytes(draft) - utf8Bytes(row.draft));
      row.draft = draft;
      row.draftHash = planHash(plan);
      await tx.getRepository(TrackingPlanEntity).save(row);
    });
    return this.get(accountId, planId);
  }

  /**
   * Freezes the draft as the next version. 409 `draft_unchanged` when it equals the latest
   * version (by hash); keys bound at `latest` move to it, so the account's caches are told.
   */
  async publish(
    accountId: string,
    planId: string,
    apiKeyId: string | null,
  ): Promise<TrackingPlanVersionView> {
    const version = await this.dataSource.transaction(async (tx) => {
      await this.lockAccount(tx, accountId);
      const plan = await this.find(tx, accountId, planId);
      const [latest] = (await tx.query(
        'SELECT version, hash FROM tracking_plan_versions WHERE plan_id = $1 ORDER BY version DESC LIMIT 1',
        [plan.id],
      )) as { version: number; hash: string }[];
      if (latest && latest.hash === plan.draftHash)
        throw conflict(
          'draft_unchanged',
          `The draft equals version ${latest.version}: there is nothing new to publish`,
        );
      if ((latest?.version ?? 0) >= this.limits.versionsPerPlan)
        throw trackingPlanLimitReached('tracking_plan_versions', this.limits.versionsPerPlan);
      await this.reserveBytes(tx, accountId, utf8Bytes(plan.draft));
      const repository = tx.getRepository(TrackingPlanVersionEntity);
      return repository.save(
        repository.create({
          planId: plan.id,
          version: (latest?.version ?? 0) + 1,
          document: plan.draft,
          hash: plan.draftHash,
          publishedAt: new Date(),
          publishedByApiKeyId: apiKeyId,
        }),
      );
    });
    await this.changes?.publish({ kind: 'tenant_changed', accountId });
    return { ...versionSummaryOf(version), plan: parsePlan(version.document) };
  }

  /** Deletes a plan and its versions; 409 `tracking_plan_in_use` while a write key binds it. */
  async remove(accountId: string, planId: string): Promise<void> {
    await this.dataSource.transaction(async (tx) => {
      await this.lockAccount(tx, accountId);
      const plan = await this.find(tx, accountId, planId, true);
      const [{ n }] = (await tx.query(
        'SELECT count(*)::int AS n FROM tracking_plan_bindings WHERE plan_id = $1',
        [plan.id],
      )) as [{ n: number }];
      if (n > 0)
        throw conflict(
          'tracking_plan_in_use',
          `${n} write key(s) bind tracking plan ${plan.id}; unbind them first`,
        );
      await tx.query('DELETE FROM tracking_plans WHERE id = $1', [plan.id]);
    });
    await this.changes?.publish({ kind: 'tenant_changed', accountId });
  }

  async versions(
    accountId: string,
    planId: string,
    page: PageRequest,
  ): Promise<ListResponse<TrackingPlanVersionSummary>> {
    const plan = await this.find(this.dataSource.manager, accountId, planId);
    const rows = (await this.dataSource.query(
      `SELECT plan_id, version, hash, published_at, published_by_api_key_id
       FROM tracking_plan_versions WHERE plan_id = $1 ORDER BY version DESC LIMIT $2 OFFSET $3`,
      [plan.id, page.limit, page.offset],
    )) as {
      plan_id: string;
      version: number;
      hash: string;
      published_at: Date;
      published_by_api_key_id: string | null;
    }[];
    const [{ n }] = (await this.dataSource.query(
      'SELECT count(*)::int AS n FROM tracking_plan_versions WHERE plan_id = $1',
      [plan.id],
    )) as [{ n: number }];
    return listResponse(
      rows.map((row) => ({
        planId: row.plan_id,
        version: row.version,
        hash: row.hash,
        publishedAt: iso(row.published_at),
        publishedByApiKeyId: row.published_by_api_key_id,
      })),
      n,
      page,
    );
  }

  async version(accountId: string, planId: string, version: number): Promise<TrackingPlanVersionView> {
    const row = await this.versionRow(accountId, planId, version);
    return { ...versionSummaryOf(row), plan: parsePlan(row.document) };
  }

  /** Any change to a published version: 409 `version_immutable` (404 when there is none). */
  async refuseVersionEdit(accountId: string, planId: string, version: number): Promise<never> {
    await this.versionRow(accountId, planId, version);
    throw conflict(
      'version_immutable',
      `Version ${version} is published and never changes; edit the draft and publish a new version`,
    );
  }

  /** The changes from version `from` to version `to` or the draft (diffPlans). */
  async diff(
    accountId: string,
    planId: string,
    from: number,
    to: number | 'draft',
  ): Promise<TrackingPlanDiff> {
    const before = parsePlan((await this.versionRow(accountId, planId, from)).document);
    const after =
      to === 'draft'
        ? parsePlan((await this.find(this.dataSource.manager, accountId, planId)).draft)
        : parsePlan((await this.versionRow(accountId, planId, to)).document);
    const changes = diffPlans(before, after);
    const counts = { breaking: 0, revision: 0, addition: 0 };
    for (const change of changes) counts[change.kind] += 1;
    return { from, to, counts, changes };
  }

  /** A version as Segment's rules; 422 `not_exportable` naming what Segment has no place for. */
  async exportSegment(accountId: string, planId: string, version: number): Promise<SegmentExportAnswer> {
    const exported = exportSegmentRules(
      parsePlan((await this.versionRow(accountId, planId, version)).document),
    );
    if (!exported.ok)
      throw unprocessable(
        'not_exportable',
        `Version ${version} cannot be written as Segment rules: ${exported.problems.length} problem(s) in errors[]`,
        exported.problems.map(({ path, code, message }) => ({ path, code, message })),
      );
    return { data: exported.value };
  }

  /**
   * Internal (ingestion): a version of the account's plan, as published. Malformed ids are
   * as unknown as missing ones: 404 `tracking_plan_version_not_found`.
   */
  async versionRecord(
    accountId: string,
    planId: string,
    version: number,
  ): Promise<TrackingPlanVersionRecord> {
    if (!isUuid(accountId) || !isUuid(planId)) throw versionNotFound(planId, version);
    const [row] = (await this.dataSource.query(
      `SELECT v.plan_id, v.version, v.hash, v.document FROM tracking_plan_versions v
       JOIN tracking_plans p ON p.id = v.plan_id
       WHERE p.account_id = $1 AND v.plan_id = $2 AND v.version = $3`,
      [accountId.toLowerCase(), planId.toLowerCase(), version],
    )) as { plan_id: string; version: number; hash: string; document: string }[];
    if (!row) throw versionNotFound(planId, version);
    return { planId: row.plan_id, version: row.version, hash: row.hash, plan: parsePlan(row.document) };
  }

  private async versionRow(
    accountId: string,
    planId: string,
    version: number,
  ): Promise<TrackingPlanVersionEntity> {
    const plan = await this.find(this.dataSource.manager, accountId, planId);
    const row = await this.dataSource
      .getRepository(TrackingPlanVersionEntity)
      .findOneBy({ planId: plan.id, version });
    if (!row) throw versionNotFound(plan.id, version);
    return row;
  }

  private async find(
    manager: EntityManager,
    accountId: string,
    planId: string,
    forUpdate = false,
  ): Promise<TrackingPlanEntity> {
    const query = manager
      .getRepository(TrackingPlanEntity)
      .createQueryBuilder('plan')
      .where('plan.id = :id AND plan.accountId = :accountId', {
        id: requireId('tracking plan', planId),
        accountId,
      });
    if (forUpdate) query.setLock('pessimistic_write');
    const plan = await query.getOne();
    if (!plan) throw planNotFound(planId);
    return plan;
  }

  /** One writer of an account's plans at a time: caps counted and versions numbered without races. */
  private async lockAccount(tx: EntityManager, accountId: string): Promise<void> {
    await tx.query("SELECT pg_advisory_xact_lock(hashtext('tracking plans'), hashtext($1::text))", [
      accountId,
    ]);
  }

  /** Refuses `added` more bytes when the account's drafts and versions would pass the cap. */
  private async reserveBytes(tx: EntityManager, accountId: string, added: number): Promise<void> {
    if (added <= 0) return;
    const [{ n }] = (await tx.query(
      `SELECT (SELECT coalesce(sum(octet_length(draft)), 0) FROM tracking_plans WHERE account_id = $1)
            + (SELECT coalesce(sum(octet_length(v.document)), 0) FROM tracking_plan_versions v
               JOIN tracking_plans p ON p.id = v.plan_id WHERE p.account_id = $1) AS n`,
      [accountId],
    )) as [{ n: string }];
    if (Number(n) + added > this.limits.bytesPerAccount)
      throw trackingPlanLimitReached('tracking_plan_bytes', this.limits.bytesPerAccount);
  }
}
