import type { DataSource } from 'typeorm';
import { AppError } from '@pipeline/errors';
import { appTypeDefinition } from '../apps/app-catalog';
import { AppEntity } from '../apps/app.entity';
import type { AppService } from '../apps/app.service';
import { hashToken } from '../auth/secret-token';
import { isUuid } from '../http/ids';
import { IntegrationEntity } from '../integrations/integration.entity';
import { warehouseSchemaFor } from '../sources/warehouse-location';
import { WriteKeyEntity } from '../write-keys/write-key.entity';
import { resolvedDestination } from '../integrations/resolved-destination';
import type { ResolvedDestination, TenantRecord } from './tenant-record.dto';

/**
 * Resolves a write key for the ingestion service. The destinations are the account's active
 * integrations whose source is a web-tracking app and whose destination app is connected,
 * plus the account's warehouse.
 */
const notFound = () => new AppError(404, 'write_key_not_found', 'Unknown write key');

export class WriteKeyResolver {
  constructor(
    private readonly dataSource: DataSource,
    private readonly apps: AppService,
  ) {}

  async resolve(writeKey: string): Promise<TenantRecord> {
    const record = await this.dataSource
      .getRepository(WriteKeyEntity)
      .findOneBy({ keyHash: hashToken(writeKey) });
    if (!record) throw notFound();
    return this.tenantOf(record, { revokedHasDestinations: false });
  }

  /**
   * For the delivery consumers, by the id the outbox carries. A revoked key still resolves to
   * the account's destinations: the events it sent before were accepted and are delivered.
   */
  async lookup(writeKeyId: string): Promise<TenantRecord> {
    if (!isUuid(writeKeyId)) throw notFound();
    const record = await this.dataSource.getRepository(WriteKeyEntity).findOneBy({ id: writeKeyId });
    if (!record) throw notFound();
    return this.tenantOf(record, { revokedHasDestinations: true });
  }

  private async tenantOf(
    record: WriteKeyEntity,
    options: { revokedHasDestinations: boolean },
  ): Promise<TenantRecord> {
    const base = {
      accountId: record.accountId,
      writeKeyId: record.id,
      allowedOrigins: record.allowedOrigins,
      rateLimits: {
        ...(record.rateLimitEventsPerSecond ? { eventsPerSecond: record.rateLimitEventsPerSecond } : {}),
        ...(record.rateLimitEventsPerDay ? { eventsPerDay: record.rateLimitEventsPerDay } : {}),
      },
      warehouse: { kind: 'warehouse' as const, schema: warehouseSchemaFor(record.accountId) },
    };
    const status = record.revokedAt ? ('revoked' as const) : ('active' as const);
    if (record.revokedAt && !options.revokedHasDestinations) return { ...base, status, destinations: [] };

    const rows = await this.dataSource
      .getRepository(IntegrationEntity)
      .createQueryBuilder('integration')
      .innerJoin(AppEntity, 'source', 'source.id = integration.sourceAppId')
      .innerJoinAndMapOne(
        'integration.destinationApp',
        AppEntity,
        'destination',
        'destination.id = integration.destinationAppId',
      )
      .where('integration.accountId = :accountId', { accountId: record.accountId })
      .andWhere("integration.state = 'active'")
      .andWhere("source.appType = 'web_tracking'")
      .andWhere("source.state <> 'deleted'")
      .andWhere("destination.state = 'active'")
      .orderBy('integration.createdAt', 'ASC')
      .getMany();

    const destinations: ResolvedDestination[] = [];
    for (const integration of rows as (IntegrationEntity & { destinationApp: AppEntity })[]) {
      const app = integration.destinationApp;
      const kind = appTypeDefinition(app.appType)?.destinationKind;
      const credentials = this.apps.openCredentials(app);
      if (!kind || !credentials) continue;
      destinations.push(resolvedDestination(integration, app, kind, credentials));
    }
    return { ...base, status, destinations };
  }
}
