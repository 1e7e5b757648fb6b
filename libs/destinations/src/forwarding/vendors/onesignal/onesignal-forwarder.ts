import type { ResolvedDestination } from '@pipeline/tenancy';
import { deliverAll, type Endpoint, type ItemRejection, type Verdict } from '../../batch-delivery';
import { requiredText } from '../../destination-settings';
import type { Forwarder, OutboundEvent, SendOutcome, VendorClientOptions } from '../../forwarder';
import { failureOfStatus, type VendorResponse } from '../../vendor-request';
import { oneSignalItemOf, type OneSignalCustomEvent, type OneSignalUserUpdate } from './onesignal-mapping';

const DEFAULT_HOST = 'https://api.onesignal.com';

/** A custom event: at most 2024 bytes each and 1 MB per request; 1000 bounds a failed request. */
const customEventLimits = { maxItems: 1000, maxBodyBytes: 1_000_000, maxItemBytes: 2024 };
/** One user per update. */
const userUpdateLimits = { maxItems: 1, maxBodyBytes: 1_000_000 };

/**
 * A 202 may list events that failed (most often: no user with that external_id yet, which a
 * later attempt may find); OneSignal's advice is to resend those only. An error naming neither
 * a known event nor a user fails the whole request, which is safe on idempotency_key.
 */
function customEventsVerdict(response: VendorResponse, events: readonly OneSignalCustomEvent[]): Verdict {
  if (response.status < 200 || response.status >= 300) {
    return { kind: 'failed', failure: failureOfStatus(response) };
  }
  const body = (response.json ?? {}) as Record<string, unknown>;
  if (!Array.isArray(body.errors) || body.errors.length === 0) return { kind: 'accepted' };
  const rejected: ItemRejection[] = [];
  const add = (index: number, reason: string) => {
    if (!rejected.some((r) => r.index === index)) rejected.push({ index, reason, retryable: true });
  };
  for (const error of body.errors as Record<string, unknown>[]) {
    const detail = (error.error ?? {}) as Record<string, unknown>;
    const reason = `event_failed: ${String(detail.title ?? detail.code ?? 'unknown error')}`;
    const byId = events.findIndex((e) => e.idempotency_key === error.event_id);
    if (byId >= 0) {
      add(byId, reason);
      continue;
    }
    const byUser = events.flatMap((e, index) => (e.external_id === error.event_user_id ? [index] : []));
    if (byUser.length > 0) byUser.forEach((index) => add(index, reason));
    else events.forEach((_, index) => add(index, reason));
  }
  return { kind: 'accepted', rejected };
}

function userUpdateVerdict(response: VendorResponse): Verdict {
  if (response.status >= 200 && response.status < 300) return { kind: 'accepted' };
  return { kind: 'failed', failure: failureOfStatus(response) };
}

/**
 * OneSignal: identify sets the user's tags (`PATCH /apps/{app_id}/users/by/external_id/{id}`),
 * track and page are custom events (`POST /apps/{app_id}/custom_events`). User updates go
 * first, so a journey an event starts sees the tags set before it.
 */
export class OneSignalForwarder implements Forwarder {
  readonly appType = 'onesignal';

  constructor(private readonly client: VendorClientOptions) {}

  send(
    destination: ResolvedDestination,
    events: readonly OutboundEvent[],
    signal?: AbortSignal,
  ): Promise<SendOutcome> {
    return deliverAll(this.appType, events, { ...this.client, signal }, async (ledger) => {
      const appId = requiredText(destination.credentials, 'appId', 'credentials');
      const apiKey = requiredText(destination.credentials, 'apiKey', 'credentials');
      const baseUrl = this.client.baseUrl ?? DEFAULT_HOST;
      const headers = { 'Content-Type': 'application/json', Authorization: `Key ${apiKey}` };
      const app = `${baseUrl}/apps/${encodeURIComponent(appId)}`;

      const customEvents: Endpoint<OneSignalCustomEvent> = {
        limits: customEventLimits,
        envelopeBytes: Buffer.byteLength(JSON.stringify({ events: [] })),
        request: (items) => ({
          method: 'POST',
          url: `${app}/custom_events`,
          headers,
          body: JSON.stringify({ events: items }),
        }),
        verdict: customEventsVerdict,
      };
      const userUpdates: Endpoint<OneSignalUserUpdate> = {
        limits: userUpdateLimits,
        envelopeBytes: 0,
        request: ([update]) => ({
          method: 'PATCH',
          url: `${app}/users/by/external_id/${encodeURIComponent(update?.externalId ?? '')}`,
          headers,
          body: JSON.stringify(update?.body ?? {}),
        }),
        verdict: userUpdateVerdict,
      };

      const updates = new Map<number, OneSignalUserUpdate[]>();
      const tracked = new Map<number, OneSignalCustomEvent[]>();
      events.forEach((outbound, position) => {
        const item = ledger.tryMap(position, () => oneSignalItemOf(outbound));
        if (item === undefined) return;
        if (typeof item === 'string') ledger.skip(position, item);
        else if (item.endpoint === 'update_user') updates.set(position, [item.update]);
        else tracked.set(position, [item.event]);
      });
      await ledger.deliver(userUpdates, updates);
      await ledger.deliver(customEvents, tracked);
    });
  }
}
