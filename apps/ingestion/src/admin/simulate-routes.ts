import { timingSafeEqual, createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { Router } from 'express';
import { isAppError } from '@pipeline/errors';
import { consentAllows, integrationAllows, normalizeEvent, receiptContextOf } from '@pipeline/events';
import type { DestinationKind, WriteKeyRecord } from '@pipeline/tenancy';
import { parseCollectBody } from '../collect/collect-request';
import { requestFacts } from '../collect/collect-endpoint';
import { readRequestBody } from '../http/request-body';
import type { CollectService, ValidatedBatch } from '../collect/collect-service';

export interface SimulateSettings {
  demoMode: boolean;
  adminSetupEnabled: boolean;
  adminToken: string | undefined;
}

const digest = (value: string) => createHash('sha256').update(value).digest();

const dryRunWarnings = [
  'dry run: no warehouse rows were written',
  'dry run: nothing was published to the outbox',
  'dry run: no destination was called',
  'schema discovery and the rules engine did not run',
];

function preview(batch: ValidatedBatch, tenant: WriteKeyRecord) {
  const targets = [
    ...(tenant.warehouse
      ? [{ kind: 'warehouse' as const, appType: 'postgres', integrationId: null as string | null }]
      : []),
    ...tenant.destinations.map((d) => ({
      kind: d.kind as DestinationKind | 'warehouse',
      appType: d.appType,
      integrationId: d.integrationId as string | null,
    })),
  ];
  return targets.map((target) => {
    const allowed = batch.events.filter(
      (e) =>
        consentAllows(target.kind, e.context?.consent) &&
        (target.kind === 'warehouse' || integrationAllows(target.appType, e.integrations)),
    );
    return {
      ...target,
      events: allowed.map((e) => ({ messageId: e.messageId, type: e.type })),
      filteredByConsent: batch.events.filter((e) => !allowed.includes(e)).map((e) => e.messageId),
    };
  });
}

/**
 * POST /admin/simulate (docs/tracking-api.md#simulate): validates, normalizes and previews a /collect body, and
 * writes, publishes and sends nothing. Off unless DEMO_MODE and ADMIN_SETUP_ENABLED are both
 * on (then it answers 404 as if absent); with them on, X-Admin-Token must equal
 * ADMIN_SETUP_TOKEN (403 invalid_admin_token otherwise).
 */
export function simulateRoutes(
  settings: SimulateSettings,
  service: CollectService,
  clientAddress: (req: IncomingMessage) => string | null,
): Router {
  const router = Router();
  const enabled = settings.demoMode && settings.adminSetupEnabled && Boolean(settings.adminToken);
  const expected = settings.adminToken ? digest(settings.adminToken) : undefined;
  router.post('/admin/simulate', async (req, res, next) => {
    if (!enabled || !expected) {
      res.status(404).json({ ok: false, error: 'not_found' });
      return;
    }
    const presented = req.headers['x-admin-token'];
    if (typeof presented !== 'string' || !timingSafeEqual(digest(presented), expected)) {
      res.status(403).json({ ok: false, error: 'invalid_admin_token' });
      return;
    }
    try {
      const facts = requestFacts(req, clientAddress);
      const request = parseCollectBody(await readRequestBody(req));
      let batch: ValidatedBatch;
      try {
        batch = await service.validate(request, facts, { countAuthAttempts: false });
      } catch (error) {
        if (!isAppError(error) || error.status >= 500) throw error;
        res.status(200).json({
          simulated: true,
          rows: [],
          destinations: [],
          warnings: [...dryRunWarnings, `the request would be refused: ${error.code}`],
          merchant: null,
          error: { error: error.code, ...error.details },
        });
        return;
      }
      const receipt = receiptContextOf(batch.receipt);
      const { tenant } = batch;
      res.status(200).json({
        simulated: true,
        received: batch.received,
        invalid: batch.errors.length,
        errors: batch.errors,
        rows: batch.events.map((event) => normalizeEvent(event, receipt)),
        destinations: preview(batch, tenant),
        warnings: dryRunWarnings,
        merchant: {
          accountId: tenant.accountId,
          writeKeyId: tenant.writeKeyId,
          allowedOrigins: tenant.allowedOrigins,
          destinations: tenant.destinations.map((d) => ({
            kind: d.kind,
            appType: d.appType,
            integrationId: d.integrationId,
          })),
        },
      });
    } catch (error) {
      next(error);
    }
  });
  return router;
}
