import type { ResolvedDestination } from '@pipeline/tenancy';
import { deliverAll, type Endpoint, type ItemRejection, type Verdict } from '../../batch-delivery';
import { optionalText, regionalHost, requiredText } from '../../destination-settings';
import type { Forwarder, OutboundEvent, SendOutcome, VendorClientOptions } from '../../forwarder';
import { failureOfStatus, type VendorResponse } from '../../vendor-request';
import { amplitudeEventOf, type AmplitudeEvent } from './amplitude-mapping';

const hosts = { default: 'https://api2.amplitude.com', eu: 'https://api.eu.amplitude.com' };

/** HTTP V2: at most 2000 events and under 1 MB per request, otherwise 413. */
const limits = { maxItems: 2000, maxBodyBytes: 1_000_000 - 1 };

/** Amplitude asks to pause a throttled user or device for 30 s and sends no Retry-After. */
const THROTTLE_PAUSE_MS = 30_000;

function indexesOf(value: unknown): [string, number[]][] {
  if (value === null || typeof value !== 'object') return [];
  return Object.entries(value as Record<string, unknown>).map(([field, indexes]) => [
    field,
    Array.isArray(indexes) ? indexes.filter((i): i is number => Number.isInteger(i)) : [],
  ]);
}

/**
 * Amplitude's 400 names the events with invalid or missing fields and ingests none of the
 * request; its guidance is to drop those and send the others again.
 */
function verdictOf(response: VendorResponse): Verdict {
  if (response.status >= 200 && response.status < 300) return { kind: 'accepted' };
  if (response.status === 413) return { kind: 'too_large' };
  const body = (response.json ?? {}) as Record<string, unknown>;
  if (response.status === 400) {
    const rejected: ItemRejection[] = [];
    for (const [field, indexes] of indexesOf(body.events_with_invalid_fields)) {
      for (const index of indexes)
        rejected.push({ index, reason: `invalid_field: ${field}`, retryable: false });
    }
    for (const [field, indexes] of indexesOf(body.events_with_missing_fields)) {
      for (const index of indexes)
        rejected.push({ index, reason: `missing_field: ${field}`, retryable: false });
    }
    if (Array.isArray(body.silenced_events)) {
      for (const index of body.silenced_events) {
        if (Number.isInteger(index)) {
          rejected.push({ index: index as number, reason: 'silenced_device', retryable: false });
        }
      }
    }
    if (rejected.length > 0) return { kind: 'resend_without', rejected };
    const failure = failureOfStatus(response);
    return {
      kind: 'failed',
      failure: body.error === 'Invalid API key' ? { ...failure, fatal: true } : failure,
    };
  }
  // A 429 may have ingested some events; resending all of them is safe on insert_id.
  return { kind: 'failed', failure: failureOfStatus(response, { defaultRetryAfterMs: THROTTLE_PAUSE_MS }) };
}

/**
 * Amplitude HTTP V2 (`POST /2/httpapi`). Identify and group become `$identify` events in the
 * same stream, so they keep their order with the events and dedupe on insert_id.
 */
export class AmplitudeForwarder implements Forwarder {
  readonly appType = 'amplitude';

  constructor(private readonly client: VendorClientOptions) {}

  send(
    destination: ResolvedDestination,
    events: readonly OutboundEvent[],
    signal?: AbortSignal,
  ): Promise<SendOutcome> {
    return deliverAll(this.appType, events, { ...this.client, signal }, async (ledger) => {
      const apiKey = requiredText(destination.credentials, 'apiKey', 'credentials');
      const baseUrl = this.client.baseUrl ?? regionalHost(destination.appConfig, hosts);
      const groupType = optionalText(destination.config.global, 'groupType', 'config.global') ?? 'company';
      // Our ids may be shorter than Amplitude's default minimum of 5, which would drop them.
      const options = { min_id_length: 1 };
      const endpoint: Endpoint<AmplitudeEvent> = {
        limits,
        envelopeBytes: Buffer.byteLength(JSON.stringify({ api_key: apiKey, events: [], options })),
        request: (items) => ({
          method: 'POST',
          url: `${baseUrl}/2/httpapi`,
          headers: { 'Content-Type': 'application/json' },
          body: JSON.stringify({ api_key: apiKey, events: items, options }),
        }),
        verdict: verdictOf,
      };
      const mapped = ledger.mapEvents((outbound) => {
        const item = amplitudeEventOf(outbound, groupType);
        return typeof item === 'string' ? item : [item];
      });
      await ledger.deliver(endpoint, mapped);
    });
  }
}
