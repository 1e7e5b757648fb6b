import { Not } from 'typeorm';
import { AppEntity } from '../../apps/app.entity';
import { IntegrationEntity } from '../../integrations/integration.entity';
import { SourceEntity } from '../../sources/source.entity';
import { bySeverity, summarize, type Finding, type StepContext, type TaskTemplate } from './template';
import { shownError } from '../../work-queue/tenant-error';

export interface ConnectorHealthParams {
  /** A connector is stale when its last sync is older than this many schedule intervals. */
  stale_after_intervals: number;
  /** Consecutive failures from which a connector is reported as failing. */
  failure_threshold: number;
  /** Also audit paused (inactive) sources and integrations. */
  include_inactive: boolean;
}

interface Inventory {
  apps: AppEntity[];
  sources: SourceEntity[];
  integrations: IntegrationEntity[];
}

const HOUR_MS = 3_600_000;
const intervalMs = (value: number, unit: 'hours' | 'days') => value * (unit === 'hours' ? 1 : 24) * HOUR_MS;

const ageText = (ms: number) =>
  ms >= 48 * HOUR_MS ? `${Math.floor(ms / (24 * HOUR_MS))} days` : `${Math.floor(ms / HOUR_MS)} hours`;

/** Whether a connector synced within `stale_after_intervals` schedule intervals (or is too new to tell). */
function staleness(
  lastSyncAt: Date | null,
  createdAt: Date,
  interval: number,
  context: StepContext<ConnectorHealthParams>,
): string | null {
  const limit = interval * context.params.stale_after_intervals;
  const reference = lastSyncAt ?? createdAt;
  const age = context.now.getTime() - reference.getTime();
  if (age <= limit) return null;
  return lastSyncAt
    ? `last synced ${ageText(age)} ago, more than ${context.params.stale_after_intervals} schedule intervals`
    : `never synced, created ${ageText(age)} ago`;
}

const appName = (app: AppEntity) => `${app.displayName} (${app.appType})`;

function auditApps(context: StepContext<ConnectorHealthParams>): Finding[] {
  const { apps, sources, integrations } = context.state.load_inventory as Inventory;
  const findings: Finding[] = [];
  for (const app of apps) {
    const resource = { type: 'app', id: app.id, name: appName(app) };
    const usedBy =
      sources.filter((s) => s.appId === app.id).length +
      integrations.filter((i) => i.sourceAppId === app.id || i.destinationAppId === app.id).length;
    if (!app.credentialsCiphertext) {
      findings.push({
        severity: usedBy > 0 ? 'critical' : 'warning',
        code: 'missing_credentials',
        resource,
        message:
          usedBy > 0
            ? `The app has no credentials but ${usedBy} connector(s) use it`
            : 'The app has no credentials',
        recommendation: `Connect it: PATCH /api/v1/apps/${app.id} with its credentials`,
      });
    }
    if (app.errorMessage) {
      findings.push({
        severity: 'critical',
        code: 'app_error',
        resource,
        message: `The app reports an error: ${app.errorMessage}`,
        recommendation: 'Check the connection on the platform, then update the credentials or config',
      });
    }
    if (app.consecutiveFailureCount >= context.params.failure_threshold) {
      findings.push({
        severity: 'critical',
        code: 'consecutive_failures',
        resource,
        message: `${app.consecutiveFailureCount} consecutive failures`,
        recommendation: 'Reconnect the app; its token may have expired or lost permissions',
      });
    }
  }
  return findings;
}

function auditSources(context: StepContext<ConnectorHealthParams>): Finding[] {
  const { apps, sources } = context.state.load_inventory as Inventory;
  const findings: Finding[] = [];
  for (const source of sources) {
    const app = apps.find((a) => a.id === source.appId);
    const resource = { type: 'source', id: source.id, name: `${source.syncType} source` };
    if (!app) {
      findings.push({
        severity: 'critical',
        code: 'app_missing',
        resource,
        message: 'The source app was deleted',
        recommendation: `Delete the source (DELETE /api/v1/sources/${source.id}) or reconnect a ${source.syncType} app`,
      });
    } else if (!app.credentialsCiphertext) {
      findings.push({
        severity: 'critical',
        code: 'missing_credentials',
        resource,
        message: `Its app ${appName(app)} has no credentials, so it cannot sync`,
        recommendation: `PATCH /api/v1/apps/${app.id} with credentials`,
      });
    }
    const sourceError = shownError(source.lastError);
    if (sourceError) {
      findings.push({
        severity: 'critical',
        code: 'sync_error',
        resource,
        message: `The last sync failed: ${sourceError.message}`,
        recommendation: `Fix the cause, then trigger a sync: POST /api/v1/sources/${source.id}/sync`,
      });
    }
    if (source.consecutiveFailures >= context.params.failure_threshold) {
      findings.push({
        severity: 'critical',
        code: 'consecutive_failures',
        resource,
        message: `${source.consecutiveFailures} consecutive failed syncs`,
        recommendation: 'Check the app connection and the import tasks; pause the source until fixed',
      });
    }
    if (source.state === 'active') {
      const interval = intervalMs(source.syncFrequencyValue, source.syncFrequencyUnit);
      const stale = staleness(source.lastSyncAt, source.createdAt, interval, context);
      if (stale) {
        findings.push({
          severity: 'warning',
          code: 'stale_sync',
          resource,
          message: `Scheduled every ${source.syncFrequencyValue} ${source.syncFrequencyUnit} but ${stale}`,
          recommendation: `Trigger a sync (POST /api/v1/sources/${source.id}/sync) and check that the scheduler runs`,
        });
      }
    } else {
      findings.push({
        severity: 'info',
        code: 'paused',
        resource,
        message: 'The source is paused',
        recommendation: `Resume it with PATCH /api/v1/sources/${source.id} {"isActive": true} or delete it`,
      });
    }
  }
  return findings;
}

function auditIntegrations(context: StepContext<ConnectorHealthParams>): Finding[] {
  const { apps, integrations } = context.state.load_inventory as Inventory;
  const findings: Finding[] = [];
  for (const integration of integrations) {
    const destination = apps.find((a) => a.id === integration.destinationAppId);
    const source = integration.sourceAppId ? apps.find((a) => a.id === integration.sourceAppId) : undefined;
    const resource = {
      type: 'integration',
      id: integration.id,
      name: `${integration.dataType} to ${destination ? appName(destination) : 'a deleted app'}`,
    };
    if (!destination) {
      findings.push({
        severity: 'critical',
        code: 'app_missing',
        resource,
        message: 'The destination app was deleted',
        recommendation: `Delete the integration (DELETE /api/v1/integrations/${integration.id})`,
      });
    } else if (!destination.credentialsCiphertext) {
      findings.push({
        severity: 'critical',
        code: 'missing_credentials',
        resource,
        message: `The destination ${appName(destination)} has no credentials: nothing is delivered`,
        recommendation: `PATCH /api/v1/apps/${destination.id} with credentials`,
      });
    }
    if (integration.sourceAppId && !source) {
      findings.push({
        severity: 'critical',
        code: 'app_missing',
        resource,
        message: 'The source app was deleted',
        recommendation: 'Recreate the integration with a live source app',
      });
    }
    const integrationError = shownError(integration.lastError);
    if (integration.status === 'errored' || integrationError) {
      findings.push({
        severity: 'critical',
        code: 'sync_error',
        resource,
        message: integrationError
          ? `The last run failed: ${integrationError.message}`
          : 'The integration is errored',
        recommendation: 'Fix the destination connection or mapping, then resume the integration',
      });
    }
    if (integration.consecutiveFailures >= context.params.failure_threshold) {
      findings.push({
        severity: 'critical',
        code: 'consecutive_failures',
        resource,
        message: `${integration.consecutiveFailures} consecutive failed runs`,
        recommendation:
          'Check the destination credentials and rate limits; pause the integration until fixed',
      });
    }
    if (integration.state === 'active' && integration.status !== 'draft') {
      const { frequencyValue, frequencyUnit } = integration.schedule;
      const stale = staleness(
        integration.lastSyncAt,
        integration.createdAt,
        intervalMs(frequencyValue, frequencyUnit),
        context,
      );
      if (stale) {
        findings.push({
          severity: 'warning',
          code: 'stale_sync',
          resource,
          message: `Scheduled every ${frequencyValue} ${frequencyUnit} but ${stale}`,
          recommendation: 'Check that the integration runs; its source may not have synced yet',
        });
      }
    } else if (integration.state === 'inactive') {
      findings.push({
        severity: 'info',
        code: 'paused',
        resource,
        message: 'The integration is paused',
        recommendation: `Resume it with PATCH /api/v1/integrations/${integration.id} {"isActive": true} or delete it`,
      });
    }
  }
  return findings;
}

export const connectorHealthAudit: TaskTemplate<ConnectorHealthParams> = {
  id: 'connector_health_audit',
  version: 1,
  name: 'Connector health audit',
  description:
    'Checks every source, integration and app of the account for errors, consecutive failures, ' +
    'syncs that are stale against their schedule and missing credentials, and writes a report ' +
    'with the findings and the recommended fix for each.',
  paramsSchema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      stale_after_intervals: { type: 'number', minimum: 1, maximum: 100, default: 2 },
      failure_threshold: { type: 'integer', minimum: 1, maximum: 1000, default: 3 },
      include_inactive: { type: 'boolean', default: true },
    },
  },
  prerequisites: [
    {
      kind: 'data',
      data: 'connectors',
      name: 'connectors',
      hint: 'Connect an app (POST /api/v1/apps) or create a source or integration to audit',
    },
    { kind: 'permission', scope: 'apps.read', name: 'apps.read', hint: 'Use an API key with apps.read' },
    {
      kind: 'permission',
      scope: 'sources.read',
      name: 'sources.read',
      hint: 'Use an API key with sources.read',
    },
    {
      kind: 'permission',
      scope: 'integrations.read',
      name: 'integrations.read',
      hint: 'Use an API key with integrations.read',
    },
  ],
  steps: [
    {
      id: 'load_inventory',
      name: 'Load the apps, sources and integrations of the account',
      async run({ dataSource, accountId, params }): Promise<Inventory> {
        const states = params.include_inactive ? Not('deleted' as const) : ('active' as const);
        const [apps, sources, integrations] = await Promise.all([
          dataSource.getRepository(AppEntity).find({ where: { accountId, state: Not('deleted' as const) } }),
          dataSource.getRepository(SourceEntity).find({ where: { accountId, state: states } }),
          dataSource.getRepository(IntegrationEntity).find({ where: { accountId, state: states } }),
        ]);
        return { apps, sources, integrations };
      },
    },
    { id: 'check_apps', name: 'Check apps', run: async (context) => auditApps(context) },
    { id: 'check_sources', name: 'Check sources', run: async (context) => auditSources(context) },
    {
      id: 'check_integrations',
      name: 'Check integrations',
      run: async (context) => auditIntegrations(context),
    },
    {
      id: 'write_report',
      name: 'Write the report',
      async run({ state, now }) {
        const { apps, sources, integrations } = state.load_inventory as Inventory;
        const findings = [
          ...(state.check_apps as Finding[]),
          ...(state.check_sources as Finding[]),
          ...(state.check_integrations as Finding[]),
        ].sort(bySeverity);
        const unhealthy = (type: string, id: string) =>
          findings.some((f) => f.resource.type === type && f.resource.id === id && f.severity !== 'info');
        const healthy = (type: string, ids: string[]) => ids.filter((id) => !unhealthy(type, id)).length;
        return {
          kind: 'connector_health_audit',
          generatedAt: now.toISOString(),
          checked: {
            apps: apps.length,
            sources: sources.length,
            integrations: integrations.length,
          },
          healthy: {
            apps: healthy(
              'app',
              apps.map((a) => a.id),
            ),
            sources: healthy(
              'source',
              sources.map((s) => s.id),
            ),
            integrations: healthy(
              'integration',
              integrations.map((i) => i.id),
            ),
          },
          summary: summarize(findings),
          findings,
        };
      },
    },
  ],
};
