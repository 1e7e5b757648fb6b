import { parseOutboxEnvelope } from '@pipeline/events';
import { RegulatedSubjects, subjectHash, type SubjectType } from '@pipeline/tenancy';
import type { DataSource } from 'typeorm';
import type { WarehousePlacements } from '../warehouse-registry/warehouse-placements';
import type {
  CreateRegulationBody,
  DryRunDestination,
  DryRunWarehouse,
  RegulationCreated,
  RegulationDryRun,
} from './regulation.dto';
import { accountWarehouseNamed, destinationsOf, plannedTargets } from './regulation-targets';
import { effectOf } from './regulation-types';
import type { RegulationService } from './regulation.service';

/** Whether a destination of an app type can delete, given its app's credentials. */
export type DeletionSupport = (
  appType: string,
  integrationId: string,
) => Promise<'supported' | 'not_supported' | 'credential_missing'>;

/** Rows per warehouse table holding the subjects, on the account's warehouse. */
export type SubjectRowCounter = (
  accountId: string,
  subjects: { userIds: readonly string[]; anonymousIds: readonly string[] },
) => Promise<{ events: number; users: number; groups: number; aliases: number }>;

/** The subjects of a regulation as the warehouse engines take them. */
export const subjectIdsOf = (type: SubjectType, ids: readonly string[]) =>
  type === 'USER_ID' ? { userIds: ids, anonymousIds: [] } : { userIds: [], anonymousIds: ids };

/** Dead letters of the account read per page while counting a dry run's. */
const DRY_RUN_PAGE = 200;

/**
 * The regulations API's work: a dry run, or the regulation with the targets its type erases.
 */
export class Regulations {
  constructor(
    readonly service: RegulationService,
    private readonly dataSource: DataSource,
    private readonly placements: Pick<WarehousePlacements, 'summaryOf'>,
    private readonly countRows: SubjectRowCounter,
    private readonly deletionSupport: DeletionSupport,
  ) {}

  async create(
    accountId: string,
    requestedBy: string,
    body: CreateRegulationBody,
  ): Promise<RegulationCreated | RegulationDryRun> {
    if (body.dryRun) return this.dryRun(accountId, body);
    const targets = await plannedTargets(
      this.dataSource,
      this.placements,
      accountId,
      effectOf[body.regulationType],
    );
    return this.service.create(accountId, requestedBy, body, targets);
  }

  /** What the regulation would erase, read without changing anything. */
  async dryRun(accountId: string, body: CreateRegulationBody): Promise<RegulationDryRun> {
    const ids = [...new Set(body.subjectIds)];
    const effect = effectOf[body.regulationType];
    const warehouses: DryRunWarehouse[] = [];
    let deadLetters = 0;
    const destinations: DryRunDestination[] = [];
    if (effect.deletes) {
      const warehouse = await accountWarehouseNamed(this.dataSource, this.placements, accountId);
      const rows = await this.countRows(accountId, subjectIdsOf(body.subjectType, ids));
      warehouses.push({ ...warehouse, rows });
      deadLetters = await this.deadLettersHolding(accountId, body.subjectType, ids);
    }
    if (effect.vendors) {
      for (const destination of await destinationsOf(this.dataSource, accountId))
        destinations.push({
          ...destination,
          deletion: await this.deletionSupport(destination.appType, destination.integrationId),
        });
    }
    return {
      data: {
        dryRun: true,
        regulationType: body.regulationType,
        subjectType: body.subjectType,
        subjects: ids.length,
        warehouses,
        deadLetters,
        destinations,
      },
    };
  }

  /** The account's dead letters holding an event of the subjects (any time received). */
  private async deadLettersHolding(
    accountId: string,
    type: SubjectType,
    ids: readonly string[],
  ): Promise<number> {
    const key = await this.service.accountKey(accountId);
    const subjects = new RegulatedSubjects({
      hashKey: key.toString('base64'),
      subjects: ids.map((id) => ({ hash: subjectHash(key, type, id), suppressed: true, deleteCutoff: null })),
    });
    let holding = 0;
    let after = '00000000-0000-0000-0000-000000000000';
    for (;;) {
      const rows = (await this.dataSource.query(
        `SELECT id, record_value FROM dead_letters WHERE account_id = $1 AND id > $2 ORDER BY id LIMIT ${DRY_RUN_PAGE}`,
        [accountId, after],
      )) as { id: string; record_value: Buffer }[];
      for (const row of rows) {
        const envelope = parseOutboxEnvelope(row.record_value);
        if (envelope?.events.some((event) => subjects.decide(event, 0) !== null)) holding += 1;
      }
      const last = rows[rows.length - 1];
      if (!last || rows.length < DRY_RUN_PAGE) return holding;
      after = last.id;
    }
  }
}
