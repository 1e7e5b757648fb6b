import { randomBytes } from 'node:crypto';
import { AppError } from '@pipeline/errors';
import {
  RegulatedSubjects,
  subjectHash,
  type RegulatedSubjectsRecord,
  subjectColumns,
  type SubjectType,
  type TenantChangePublisher,
} from '@pipeline/tenancy';
import type { DataSource, EntityManager } from 'typeorm';
import type { CredentialCipher } from '../apps/credential-cipher';
import { iso, isoOrNull } from '../http/list-query';
import { isUuid } from '../http/ids';
import { listResponse, type ListResponse, type PageRequest } from '../http/pagination';
import type {
  CreateRegulationBody,
  RegulationCreated,
  RegulationTargetView,
  RegulationView,
  SuppressionView,
} from './regulation.dto';
import {
  effectOf,
  monthOf,
  type RegulationStatus,
  type RegulationType,
  type TargetKind,
  type TargetStatus,
} from './regulation-types';

/** REGULATION_SUBJECTS_PER_MONTH's default: Segment's limit, 110,000 users a calendar month. */
export const DEFAULT_SUBJECTS_PER_MONTH = 110_000;

export interface RegulationLimits {
  /** Subject ids an account may regulate in a calendar month (UTC); UNSUPPRESS is not counted. */
  subjectsPerMonth: number;
}

export interface RegulationFilter {
  status?: RegulationStatus;
  regulationType?: RegulationType;
  since?: Date;
}

/** A target as the worker and the view read it. */
export interface TargetRow {
  regulation_id: string;
  target: string;
  kind: TargetKind;
  name: string;
  app_type: string | null;
  status: TargetStatus;
  attempts: number;
  progress: number;
  cursor: string | null;
  erased: number;
  vendor_job_ids: string[];
  last_error_code: string | null;
  last_error_message: string | null;
  next_attempt_at: Date;
  updated_at: Date;
}

interface RegulationRow {
  id: string;
  account_id: string;
  regulation_type: RegulationType;
  subject_type: SubjectType;
  subject_count: number;
  status: string;
  created_at: Date;
  finished_at: Date | null;
  cutoff: Date | null;
}

/** The raw ids of a running regulation, as sealed in its row. */
export interface SealedSubjects {
  ids: string[];
}

/** A destination of the account a vendor-deleting regulation asks, with what it can do. */
export interface RegulatedDestination {
  integrationId: string;
  name: string;
  appType: string;
}

export const regulationNotFound = (id: string) =>
  new AppError(404, 'regulation_not_found', `Regulation ${id} was not found`);

const statusOfRow = (status: string): RegulationStatus => status.toUpperCase() as RegulationStatus;

const AUDIT_SUBJECTS = 'regulation-subjects:';
const ACCOUNT_KEY = 'regulation-key:';

/**
 * Privacy regulations (docs/privacy.md): what a regulation changes at once (the subjects'
 * suppression and deletion cut-off, which every service decides events by within 10 s of the
 * broadcast), the targets the worker then erases from, and the audit record. Raw ids exist only
 * sealed in a running regulation's row; everything else holds keyed hashes.
 */
export class RegulationService {
  constructor(
    private readonly dataSource: DataSource,
    // Only seal and open: the operator CLI reads the audit without CREDENTIALS_ENCRYPTION_KEYS.
    private readonly cipher: Pick<CredentialCipher, 'seal' | 'open'>,
    private readonly changes: TenantChangePublisher | undefined,
    private readonly limits: RegulationLimits = { subjectsPerMonth: DEFAULT_SUBJECTS_PER_MONTH },
  ) {}

  /** The account's HMAC key, made (and sealed) the first time it is needed. */
  async accountKey(accountId: string, manager: EntityManager = this.dataSource.manager): Promise<Buffer> {
    const found = (await manager.query(
      'SELECT sealed_key, key_id FROM regulation_keys WHERE account_id = $1',
      [accountId],
    )) as { sealed_key: string; key_id: string }[];
    if (found[0]) return this.openKey(accountId, found[0]);
    const sealed = this.cipher.seal({ key: randomBytes(32).toString('base64') }, ACCOUNT_KEY + accountId);
    await manager.query(
      `INSERT INTO regulation_keys (account_id, sealed_key, key_id) VALUES ($1, $2, $3)
       ON CONFLICT (account_id) DO NOTHING`,
      [accountId, sealed.ciphertext, sealed.keyId],
    );
    // Another request may have made it first: everyone uses the stored one.
    const [stored] = (await manager.query(
      'SELECT sealed_key, key_id FROM regulation_keys WHERE account_id = $1',
      [accountId],
    )) as { sealed_key: string; key_id: string }[];
    if (!stored) throw new Error(`regulation key of account ${accountId} vanished`);
    return this.openKey(accountId, stored);
  }

  private openKey(accountId: string, row: { sealed_key: string; key_id: string }): Buffer {
    const opened = this.cipher.open(
      { ciphertext: row.sealed_key, keyId: row.key_id },
      ACCOUNT_KEY + accountId,
    );
    return Buffer.from(String(opened.key), 'base64');
  }

  /** What ingestion and the consumers decide the account's events by. */
  async regulatedSubjects(accountId: string): Promise<RegulatedSubjectsRecord> {
    if (!isUuid(accountId))
      return {
        accountId,
        writeKeyId: '',
        hashKey: randomBytes(32).toString('base64'),
        ...subjectColumns([]),
      };
    const rows = (await this.dataSource.query(
      `SELECT subject_hash, subject_type, suppressed, delete_cutoff FROM regulation_subjects
        WHERE account_id = $1 AND (suppressed OR delete_cutoff IS NOT NULL)`,
      [accountId],
    )) as {
      subject_hash: string;
      subject_type: SubjectType;
      suppressed: boolean;
      delete_cutoff: Date | null;
    }[];
    // An account that never regulated anyone gets a key only when it does.
    const key = rows.length > 0 ? await this.accountKey(accountId) : randomBytes(32);
    return {
      accountId,
      writeKeyId: '',
      hashKey: key.toString('base64'),
      ...subjectColumns(
        rows.map((row) => ({
          hash: row.subject_hash,
          type: row.subject_type,
          suppressed: row.suppressed,
          deleteCutoff: row.delete_cutoff ? row.delete_cutoff.toISOString() : null,
        })),
      ),
    };
  }

  /** The account's regulations ready to decide events (the dead-letter index, the worker). */
  async regulationOf(accountId: string): Promise<RegulatedSubjects> {
    return new RegulatedSubjects(await this.regulatedSubjects(accountId));
  }

  /**
   * Creates a regulation and applies what it changes at once: the subjects' suppression and
   * cut-off, then the broadcast. `targets` are where a deleting one erases (the worker's).
   */
  async create(
    accountId: string,
    requestedBy: string,
    body: CreateRegulationBody,
    targets: readonly { target: string; kind: TargetKind; name: string; appType: string | null }[],
  ): Promise<RegulationCreated> {
    const ids = [...new Set(body.subjectIds)];
    const effect = effectOf[body.regulationType];
    const id = await this.dataSource.transaction(async (manager) => {
      // One account's creations one at a time: the monthly quota is checked against a settled count.
      await manager.query(`SELECT pg_advisory_xact_lock(hashtext('regulations:' || $1))`, [accountId]);
      if (body.regulationType !== 'UNSUPPRESS') await this.checkQuota(manager, accountId, ids.length);
      const key = await this.accountKey(accountId, manager);
      const [row] = (await manager.query(
        `INSERT INTO regulations (account_id, regulation_type, subject_type, subject_count, status, requested_by, cutoff)
         VALUES ($1, $2, $3, $4, $5, $6, CASE WHEN $7::boolean THEN now() END)
         RETURNING id, cutoff`,
        [
          accountId,
          body.regulationType,
          body.subjectType,
          ids.length,
          effect.deletes ? 'running' : 'finished',
          requestedBy,
          effect.deletes,
        ],
      )) as { id: string; cutoff: Date | null }[];
      if (!row) throw new Error('INSERT ... RETURNING answered no row');
      if (effect.deletes) {
        const sealed = this.cipher.seal({ ids } satisfies SealedSubjects, AUDIT_SUBJECTS + row.id);
        await manager.query('UPDATE regulations SET sealed_subjects = $2, seal_key_id = $3 WHERE id = $1', [
          row.id,
          sealed.ciphertext,
          sealed.keyId,
        ]);
        for (const target of targets)
          await manager.query(
            `INSERT INTO regulation_targets (regulation_id, target, kind, name, app_type, status)
             VALUES ($1, $2, $3, $4, $5, 'waiting_fence')`,
            [row.id, target.target, target.kind, target.name, target.appType],
          );
      } else {
        await manager.query('UPDATE regulations SET finished_at = now() WHERE id = $1', [row.id]);
      }
      const hashes = ids.map((subject) => subjectHash(key, body.subjectType, subject));
      await manager.query(
        `INSERT INTO regulation_subjects AS s
           (account_id, subject_hash, subject_type, suppressed, suppressed_since, suppressed_by, delete_cutoff)
         SELECT $1, hash, $3, coalesce($4::boolean, false),
                CASE WHEN $4::boolean THEN now() END, CASE WHEN $4::boolean THEN $5::uuid END, $6::timestamptz
           FROM unnest($2::text[]) AS hash
         ON CONFLICT (account_id, subject_hash) DO UPDATE SET
           suppressed = coalesce($4::boolean, s.suppressed),
           suppressed_since = CASE WHEN $4::boolean IS NULL THEN s.suppressed_since
                                   WHEN $4::boolean THEN coalesce(CASE WHEN s.suppressed THEN s.suppressed_since END, now())
                                   END,
           suppressed_by = CASE WHEN $4::boolean IS NULL THEN s.suppressed_by
                                WHEN $4::boolean THEN CASE WHEN s.suppressed THEN s.suppressed_by ELSE $5::uuid END
                                END,
           delete_cutoff = greatest(s.delete_cutoff, excluded.delete_cutoff),
           updated_at = now()`,
        [accountId, hashes, body.subjectType, effect.suppress, row.id, row.cutoff],
      );
      return row.id;
    });
    // After the commit: a cache that asks again at once must see the new state.
    await this.changes?.publish({ kind: 'tenant_changed', accountId });
    return { data: { regulateId: id, regulation: await this.get(accountId, id) } };
  }

  private async checkQuota(manager: EntityManager, accountId: string, adding: number): Promise<void> {
    const { start, end } = monthOf(new Date());
    const [used] = (await manager.query(
      `SELECT coalesce(sum(subject_count), 0)::int AS n FROM regulations
        WHERE account_id = $1 AND regulation_type <> 'UNSUPPRESS' AND created_at >= $2 AND created_at < $3`,
      [accountId, start, end],
    )) as { n: number }[];
    const n = used?.n ?? 0;
    if (n + adding > this.limits.subjectsPerMonth) {
      throw new AppError(
        429,
        'regulation_quota_exceeded',
        `The account may regulate ${this.limits.subjectsPerMonth} subject ids a calendar month (REGULATION_SUBJECTS_PER_MONTH); ${n} are used and this regulation names ${adding}. Nothing was changed.`,
        { limit: this.limits.subjectsPerMonth, used: n, requested: adding, resetsAt: end.toISOString() },
      );
    }
  }

  /** One regulation of the account; of any account for the operator (null). */
  async get(accountId: string | null, id: string): Promise<RegulationView> {
    if (!isUuid(id)) throw regulationNotFound(id);
    const rows = (await this.dataSource.query(
      `SELECT id, account_id, regulation_type, subject_type, subject_count, status, created_at, finished_at, cutoff
         FROM regulations WHERE id = $1 AND ($2::uuid IS NULL OR account_id = $2::uuid)`,
      [id, accountId],
    )) as RegulationRow[];
    const row = rows[0];
    if (!row) throw regulationNotFound(id);
    return (await this.views([row]))[0] as RegulationView;
  }

  /** The account's regulations, newest first; every account's for the operator (null). */
  async list(
    accountId: string | null,
    filter: RegulationFilter,
    page: PageRequest,
  ): Promise<ListResponse<RegulationView>> {
    const where = ['true'];
    const params: unknown[] = [];
    if (accountId !== null) {
      if (!isUuid(accountId)) return listResponse([], 0, page);
      params.push(accountId);
      where.push(`account_id = $${params.length}`);
    }
    if (filter.status) {
      params.push(filter.status.toLowerCase());
      where.push(`status = $${params.length}`);
    }
    if (filter.regulationType) {
      params.push(filter.regulationType);
      where.push(`regulation_type = $${params.length}`);
    }
    if (filter.since) {
      params.push(filter.since);
      where.push(`created_at >= $${params.length}`);
    }
    const [count] = (await this.dataSource.query(
      `SELECT count(*)::int AS n FROM regulations WHERE ${where.join(' AND ')}`,
      params,
    )) as { n: number }[];
    const rows = (await this.dataSource.query(
      `SELECT id, account_id, regulation_type, subject_type, subject_count, status, created_at, finished_at, cutoff
         FROM regulations WHERE ${where.join(' AND ')}
        ORDER BY created_at DESC, id DESC LIMIT ${page.limit} OFFSET ${page.offset}`,
      params,
    )) as RegulationRow[];
    return listResponse(await this.views(rows), count?.n ?? 0, page);
  }

  private async views(rows: readonly RegulationRow[]): Promise<RegulationView[]> {
    if (rows.length === 0) return [];
    const targets = (await this.dataSource.query(
      `SELECT * FROM regulation_targets WHERE regulation_id = ANY($1::uuid[]) ORDER BY regulation_id, target`,
      [rows.map((row) => row.id)],
    )) as TargetRow[];
    return rows.map((row) => ({
      id: row.id,
      accountId: row.account_id,
      regulationType: row.regulation_type,
      subjectType: row.subject_type,
      subjectCount: row.subject_count,
      overallStatus: statusOfRow(row.status),
      createdAt: iso(row.created_at),
      finishedAt: isoOrNull(row.finished_at),
      cutoff: isoOrNull(row.cutoff),
      targets: targets.filter((t) => t.regulation_id === row.id).map(targetView),
    }));
  }

  /** The account's suppressed subjects, newest first; `subject` narrows to one id (by its hash). */
  async suppressions(
    accountId: string,
    subject: { type: SubjectType; id: string } | null,
    page: PageRequest,
  ): Promise<ListResponse<SuppressionView>> {
    const params: unknown[] = [accountId];
    let narrow = '';
    if (subject) {
      params.push(subjectHash(await this.accountKey(accountId), subject.type, subject.id));
      narrow = ' AND subject_hash = $2';
    }
    const [count] = (await this.dataSource.query(
      `SELECT count(*)::int AS n FROM regulation_subjects WHERE account_id = $1 AND suppressed${narrow}`,
      params,
    )) as { n: number }[];
    const rows = (await this.dataSource.query(
      `SELECT subject_hash, subject_type, suppressed_since, suppressed_by FROM regulation_subjects
        WHERE account_id = $1 AND suppressed${narrow}
        ORDER BY suppressed_since DESC, subject_hash LIMIT ${page.limit} OFFSET ${page.offset}`,
      params,
    )) as {
      subject_hash: string;
      subject_type: SubjectType;
      suppressed_since: Date;
      suppressed_by: string;
    }[];
    return listResponse(
      rows.map((row) => ({
        regulateId: row.suppressed_by,
        subjectType: row.subject_type,
        subjectHash: row.subject_hash,
        since: iso(row.suppressed_since),
      })),
      count?.n ?? 0,
      page,
    );
  }

  /**
   * Lifts what a regulation suppressed, as an UNSUPPRESS of the same subjects would: its
   * subjects still suppressed by it (a later regulation's suppression of one is that one's to
   * lift). Answers the UNSUPPRESS regulation it records.
   */
  async lift(accountId: string, regulationId: string, requestedBy: string): Promise<RegulationCreated> {
    await this.get(accountId, regulationId);
    const id = await this.dataSource.transaction(async (manager) => {
      const lifted = (await manager.query(
        `UPDATE regulation_subjects SET suppressed = false, suppressed_since = NULL, suppressed_by = NULL, updated_at = now()
          WHERE account_id = $1 AND suppressed AND suppressed_by = $2
          RETURNING subject_type`,
        [accountId, regulationId],
      )) as [{ subject_type: SubjectType }[], number];
      const rows = lifted[0];
      const first = rows[0];
      if (!first)
        throw new AppError(
          409,
          'not_suppressed',
          `No subject is suppressed by regulation ${regulationId} any more: nothing to lift`,
        );
      const [row] = (await manager.query(
        `INSERT INTO regulations (account_id, regulation_type, subject_type, subject_count, status, requested_by, finished_at)
         VALUES ($1, 'UNSUPPRESS', $2, $3, 'finished', $4, now()) RETURNING id`,
        [accountId, first.subject_type, rows.length, requestedBy],
      )) as { id: string }[];
      if (!row) throw new Error('INSERT ... RETURNING answered no row');
      return row.id;
    });
    await this.changes?.publish({ kind: 'tenant_changed', accountId });
    return { data: { regulateId: id, regulation: await this.get(accountId, id) } };
  }

  /** The raw ids of a running regulation (null once it finished and they were erased). */
  async sealedSubjects(regulationId: string): Promise<string[] | null> {
    const [row] = (await this.dataSource.query(
      'SELECT sealed_subjects, seal_key_id FROM regulations WHERE id = $1',
      [regulationId],
    )) as { sealed_subjects: string | null; seal_key_id: string | null }[];
    if (!row?.sealed_subjects || !row.seal_key_id) return null;
    const opened = this.cipher.open(
      { ciphertext: row.sealed_subjects, keyId: row.seal_key_id },
      AUDIT_SUBJECTS + regulationId,
    ) as unknown as SealedSubjects;
    return opened.ids;
  }
}

function targetView(row: TargetRow): RegulationTargetView {
  return {
    target: row.target,
    kind: row.kind,
    name: row.name,
    appType: row.app_type,
    status: row.status,
    attempts: row.attempts,
    lastError:
      row.last_error_code === null
        ? null
        : { code: row.last_error_code, message: row.last_error_message ?? row.last_error_code },
    updatedAt: iso(row.updated_at),
  };
}
