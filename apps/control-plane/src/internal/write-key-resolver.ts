import type { DataSource } from 'typeorm';
import { AppError } from '@pipeline/errors';
import { destinationCategoryOf } from '@pipeline/catalog';
import { AppEntity } from '../apps/app.entity';
import type { AppService } from '../apps/app.service';
import { hashToken } from '../auth/secret-token';
import { isUuid } from '../http/ids';
import { IntegrationEntity } from '../integrations/integration.entity';
import type { FunctionBindings } from '../functions/function-bindings';
import type { TrackingPlanBindings } from '../tracking-plans/tracking-plan-bindings';
import type { WarehousePlacements } from '../warehouse-registry/warehouse-placements';
import { WriteKeyEntity } from '../write-keys/write-key.entity';
import { resolvedDestination } from '../integrations/resolved-destination';
import type {
  DestinationSummary,
  ResolvedDestination,
  TenantRecord,
  WriteKeyRecord,
} from './tenant-record.dto';

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
    private readonly placements: WarehousePlacements,
    private readonly trackingPlans: TrackingPlanBindings,
    private readonly functions: FunctionBindings,
  ) {}

  /** For ingestion: where the key's events go, without any credential or config. */
  async resolve(writeKey: string): Promise<WriteKeyRecord> {
    const record = await this.dataSource
      .getRepository(WriteKeyEntity)
      .findOneBy({ keyHash: hashToken(writeKey) });
    if (!record) throw notFound();
    const base = await this.baseOf(record);
    if (record.revokedAt) return { ...base, status: 'revoked', destinations: [], trackingPlan: null };
    const destinations: DestinationSummary[] = [];
    for (const { integration, app, kind } of await this.destinationsOf(record.accountId)) {
      if (!app.credentialsCiphertext || !app.credentialsKeyId) continue;
      destinations.push({
        integrationId: integration.id,
        kind,
        appId: app.id,
        appType: app.appType,
        dataType: integration.dataType,
      });
    }
    return { ...base, status: 'active', destinations };
  }

  /**
   * For the delivery consumer of `appType`, by the id the outbox carries: that app type's
   * destinations only, so no other vendor's credentials are even decrypted, each with the
   * function version its integration binds. A revoked key still resolves to the account's
   * destinations: the events it sent before were accepted and are delivered.
   */
  async lookup(writeKeyId: string, appType: string): Promise<TenantRecord> {
    if (!isUuid(writeKeyId)) throw notFound();
    const record = await this.dataSource.getRepository(WriteKeyEntity).findOneBy({ id: writeKeyId });
    if (!record) throw notFound();
    const found: ResolvedDestination[] = [];
    for (const { integration, app, kind } of await this.destinationsOf(record.accountId)) {
      if (app.appType !== appType) continue;
      const credentials = this.apps.openCredentials(app);
      if (credentials) found.push(resolvedDestination(integration, app, kind, credentials));
    }
    const bound = await this.functions.integrationFunctions(
      record.accountId,
      found.map((destination) => destination.integrationId),
    );
    const destinations = found.map((destination) => ({
      ...destination,
      function: bound.get(destination.integrationId) ?? null,
    }));
    return {
      ...(await this.baseOf(record)),
      status: record.revokedAt ? 'revoked' : 'active',
      destinations,
    };
  }

  private async baseOf(record: WriteKeyEntity) {
    // The placement only: ingestion and the forwarding consumers never hold a warehouse's password.
    const { warehouseId, engine, schema, epoch } = await this.placements.placementOf(record.accountId);
    return {
      accountId: record.accountId,
      writeKeyId: record.id,
      allowedOrigins: record.allowedOrigins,
      rateLimits: {
        ...(record.rateLimitEventsPerSecond ? { eventsPerSecond: record.rateLimitEventsPerSecond } : {}),
        ...(record.rateLimitEventsPerDay ? { eventsPerDay: record.rateLimitEventsPerDay } : {}),
      },
      warehouse: { kind: 'warehouse' as const, warehouseId, engine, schema, epoch },
      // The version is resolved now: `latest` is the newest published at this moment, and every
      // publish is broadcast so that caches resolve the key again.
      trackingPlan: await this.trackingPlans.bindingOf(record.id),
    };
  }

  /** The account's active integrations from web tracking to an active destination app. */
  private async destinationsOf(accountId: string) {
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
      .where('integration.accountId = :accountId', { accountId })
      .andWhere("integration.state = 'active'")
      .andWhere("source.appType = 'web_tracking'")
      .andWhere("source.state <> 'deleted'")
      .andWhere("destination.state = 'active'")
      .orderBy('integration.createdAt', 'ASC')
      .getMany();

    return (rows as (IntegrationEntity & { destinationApp: AppEntity })[]).flatMap((integration) => {
      const app = integration.destinationApp;
      const kind = destinationCategoryOf(app.appType);
      return kind ? [{ integration, app, kind }] : [];
    });
  }
}
