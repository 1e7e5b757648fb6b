import type { ResolvedDestination } from '@pipeline/tenancy';
import { deliverAll, type Endpoint, type ItemRejection, type Verdict } from '../../batch-delivery';
import { optionalText, regionalHost, requiredText } from '../../destination-settings';
import {
  defined,
  eventTime,
  PAGE_VIEWED,
  pageFields,
  payloadOf,
  SCREEN_VIEWED,
  screenFields,
  userIdOf,
} from '../../event-fields';
import type { Forwarder, OutboundEvent, SendOutcome, VendorClientOptions } from '../../forwarder';
import { failureOfStatus, type VendorResponse } from '../../vendor-request';

/** An event of Amplitude's HTTP V2 API. */
export type AmplitudeEvent = Record<string, unknown> & { event_type: string; insert_id: string };

const hosts = { default: 'https://api2.amplitude.com', eu: 'https://api.eu.amplitude.com' };

/** HTTP V2: at most 2000 events and under 1 MB per request, otherwise 413. */
const limits = { maxItems: 2000, maxBodyBytes: 1_000_000 - 1 };

/** Amplitude asks to pause a throttled user or device for 30 s and sends no Retry-After. */
const THROTTLE_PAUSE_MS = 30_000;

const sessionIdOf = (value: string | undefined): number | undefined =>
  // Stryker disable next-line ConditionalExpression: RegExp test() reads undefined as the text "undefined", no digits
  value !== undefined && /^\d{10,16}$/.test(value) ? Number(value) : undefined;

/**
 * Our event as an Amplitude event, or the reason it has none. `groupType` names the group
 * type a group call sets (integration config `global.groupType`, default "company").
 */
export function amplitudeEventOf(outbound: OutboundEvent, groupType: string): AmplitudeEvent | string {
  const { event, receipt } = outbound;
  const context = event.context ?? {};
  const common = defined({
    user_id: userIdOf(event),
    device_id: event.anonymousId,
    time: eventTime(outbound).getTime(),
    insert_id: event.messageId,
    // Amplitude sessions are the session's start in ms; another id format means no session.
    session_id: sessionIdOf(event.sessionId ?? context.session?.id),
    // Without an ip Amplitude would not locate the user; "$remote" would locate our server.
    ip: receipt.ip ?? undefined,
    platform: 'Web',
    os_name: context.os,
    device_model: context.device,
    language: context.language ?? context.locale,
  });
  switch (event.type) {
    case 'track': {
      const properties = payloadOf(event);
      const revenue = typeof properties.revenue === 'number' ? properties.revenue : undefined;
      return { ...common, event_type: event.event, event_properties: properties, ...defined({ revenue }) };
    }
    case 'page':
      return {
        ...common,
        event_type: PAGE_VIEWED,
        event_properties: { ...pageFields(event), ...(event.properties ?? {}) },
      };
    case 'screen':
      return { ...common, event_type: SCREEN_VIEWED, event_properties: screenFields(event) };
    case 'identify':
      return { ...common, event_type: '$identify', user_properties: { $set: event.traits ?? {} } };
    case 'group':
      // Group properties are the Group Identify API (an Accounts add-on); the membership is here.
      return {
        ...common,
        event_type: '$identify',
        groups: { [groupType]: event.groupId },
        user_properties: { $set: { [groupType]: event.groupId } },
      };
    case 'alias':
      return 'alias_not_supported: Amplitude links user ids through its User Mapping API, not HTTP V2';
  }
}

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
