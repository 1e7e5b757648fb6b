import { destinationCategoryOf } from '@pipeline/catalog';
import type { ResolvedDestination } from '@pipeline/tenancy';
import type { DataSource } from 'typeorm';
import { AppEntity } from '../apps/app.entity';
import type { CredentialCipher } from '../apps/credential-cipher';
import { IntegrationEntity } from '../integrations/integration.entity';
import { resolvedDestination } from '../integrations/resolved-destination';

/**
 * An integration as its vendor client needs it, credentials opened; null when it or its app is
 * gone or the app has no credentials.
 */
export async function resolvedIntegration(
  dataSource: DataSource,
  cipher: CredentialCipher,
  integrationId: string,
): Promise<ResolvedDestination | null> {
  const integration = await dataSource.getRepository(IntegrationEntity).findOneBy({ id: integrationId });
  if (!integration || integration.state === 'deleted') return null;
  const app = await dataSource.getRepository(AppEntity).findOneBy({ id: integration.destinationAppId });
  const kind = app ? destinationCategoryOf(app.appType) : undefined;
  if (!app || !kind || app.state === 'deleted' || !app.credentialsCiphertext || !app.credentialsKeyId)
    return null;
  const credentials = cipher.open(
    { ciphertext: app.credentialsCiphertext, keyId: app.credentialsKeyId },
    `app:${app.id}`,
  );
  return resolvedDestination(integration, app, kind, credentials);
}

/** What a vendor client says of a destination before anything is sent. */
export interface DeletionCapability {
  missingCredential(destination: ResolvedDestination): string | null;
}

/** Whether the integration's vendor can delete: no client, a credential missing, or supported. */
export async function deletionSupportOf(
  dataSource: DataSource,
  cipher: CredentialCipher,
  clientFor: (appType: string) => DeletionCapability | undefined,
  appType: string,
  integrationId: string,
): Promise<'supported' | 'not_supported' | 'credential_missing'> {
  const client = clientFor(appType);
  if (!client) return 'not_supported';
  const destination = await resolvedIntegration(dataSource, cipher, integrationId);
  if (!destination || client.missingCredential(destination) !== null) return 'credential_missing';
  return 'supported';
}
