import type { ResolvedDestination } from '@pipeline/tenancy';
import { deliverAll, type Endpoint, type ItemRejection, type Verdict } from '../../batch-delivery';
import { optionalText, requiredText } from '../../destination-settings';
import type { Forwarder, OutboundEvent, SendOutcome, VendorClientOptions } from '../../forwarder';
import { failureOfStatus, type VendorResponse } from '../../vendor-request';
import { brazeRestEndpoint } from './braze-endpoint';
import { brazeObjectsOf, type BrazeArray, type BrazeMapping, type BrazeObject } from './braze-mapping';

/**
 * 75 objects per request: the legacy limit was 75 of each kind, newer docs say 75 combined,
 * so combined. Braze documents no byte limit; 4 MB keeps requests reasonable.
 */
const limits = { maxItems: 75, maxBodyBytes: 4 * 1024 * 1024 };

function bodyOf(items: readonly BrazeObject[]) {
  const body: Partial<Record<BrazeArray, Record<string, unknown>[]>> = {};
  for (const item of items) (body[item.array] ??= []).push(item.object);
  return body;
}

/** Braze's X-RateLimit-Reset is the epoch second the window resets. */
function untilRateLimitReset(response: VendorResponse): number | undefined {
  const reset = Number(response.headers.get('x-ratelimit-reset'));
  return Number.isFinite(reset) && reset > 0 ? Math.max(0, reset * 1000 - Date.now()) : undefined;
}

/**
 * Braze answers "success" with non-fatal `errors` for objects it did not process; the others
 * were processed. An error that names no object cannot be traced, so the request counts as
 * delivered: sending it again would duplicate everything else (Braze does not deduplicate).
 */
function verdictOf(response: VendorResponse, items: readonly BrazeObject[]): Verdict {
  const policy = { fatalStatuses: [401, 403, 404], retryAfterFallback: untilRateLimitReset };
  if (response.status < 200 || response.status >= 300) {
    return { kind: 'failed', failure: failureOfStatus(response, policy) };
  }
  const body = (response.json ?? {}) as Record<string, unknown>;
  if (body.message !== 'success' && body.message !== 'queued') {
    return { kind: 'failed', failure: { reason: `fatal: ${String(body.message)}`, retryable: false } };
  }
  if (!Array.isArray(body.errors)) return { kind: 'accepted' };
  // Positions in each array of the body, back to positions in the request.
  const positions: Record<BrazeArray, number[]> = { attributes: [], events: [], purchases: [] };
  items.forEach((item, index) => positions[item.array].push(index));
  const rejected: ItemRejection[] = [];
  for (const error of body.errors as Record<string, unknown>[]) {
    const array = error.input_array;
    if (array !== 'attributes' && array !== 'events' && array !== 'purchases') continue;
    const index = Number.isInteger(error.index) ? positions[array][error.index as number] : undefined;
    if (index === undefined) continue;
    rejected.push({ index, reason: `rejected: ${String(error.type ?? 'invalid object')}`, retryable: false });
  }
  return { kind: 'accepted', rejected };
}

/** Braze `POST /users/track`. */
export class BrazeForwarder implements Forwarder {
  readonly appType = 'braze';

  constructor(private readonly client: VendorClientOptions) {}

  send(
    destination: ResolvedDestination,
    events: readonly OutboundEvent[],
    signal?: AbortSignal,
  ): Promise<SendOutcome> {
    return deliverAll(this.appType, events, { ...this.client, signal }, async (ledger) => {
      const apiKey = requiredText(destination.credentials, 'apiKey', 'credentials');
      const restEndpoint = brazeRestEndpoint(destination.appConfig);
      const baseUrl = this.client.baseUrl ?? restEndpoint;
      const mapping: BrazeMapping = {
        appId: optionalText(destination.appConfig, 'appId', 'appConfig'),
        anonymousProfiles: destination.config.global.anonymousProfiles === true,
      };
      const endpoint: Endpoint<BrazeObject> = {
        limits,
        envelopeBytes: Buffer.byteLength(JSON.stringify({ attributes: [], events: [], purchases: [] })),
        request: (items) => ({
          method: 'POST',
          url: `${baseUrl}/users/track`,
          headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${apiKey}` },
          body: JSON.stringify(bodyOf(items)),
        }),
        verdict: verdictOf,
      };
      const mapped = ledger.mapEvents((outbound) => brazeObjectsOf(outbound, mapping));
      await ledger.deliver(endpoint, mapped);
    });
  }
}
