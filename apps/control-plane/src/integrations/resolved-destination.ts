import type { DestinationKind, ResolvedDestination } from '@pipeline/tenancy';
import type { AppEntity } from '../apps/app.entity';
import type { IntegrationEntity } from './integration.entity';

/** What a destination client needs to send an integration's data: one shape for real-time delivery and runs. */
export function resolvedDestination(
  integration: IntegrationEntity,
  app: AppEntity,
  kind: DestinationKind,
  credentials: Record<string, unknown>,
): ResolvedDestination {
  return {
    integrationId: integration.id,
    kind,
    appId: app.id,
    appType: app.appType,
    dataType: integration.dataType,
    config: integration.config,
    credentials,
    appConfig: app.config,
  };
}
