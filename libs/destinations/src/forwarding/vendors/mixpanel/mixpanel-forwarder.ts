import type { ResolvedDestination } from '@pipeline/tenancy';
import { deliverAll, type Endpoint, type ItemRejection, type Verdict } from '../../batch-delivery';
import { mixpanelInsertId } from '../../dedupe-keys';
import { InvalidConfig, optionalText, regionalHost } from '../../destination-settings';
import {
  defined,
  eventTime,
  pageFields,
  SCREEN_VIEWED,
  screenFields,
  userAgentOf,
  userIdOf,
} from '../../event-fields';
import type { Forwarder, OutboundEvent, SendOutcome, VendorClientOptions } from '../../forwarder';
import { basicAuth, failureOfStatus, type VendorResponse } from '../../vendor-request';

/** A record of Mixpanel's import API. */
export interface MixpanelRecord {
  event: string;
  properties: Record<string, unknown>;
}

const hosts = {
  default: 'https://api.mixpanel.com',
  eu: 'https://api-eu.mixpanel.com',
  in: 'https://api-in.mixpanel.com',
};

/**
 * 2000 records per request; the body limit is 10 MB in current docs and 2 MB in the older
 * OpenAPI (whose 413 example still says 2097152 bytes), so the smaller one.
 */
const limits = { maxItems: 2000, maxBodyBytes: 2 * 1024 * 1024 };

/** Mixpanel's own name for a page view (its JS SDK's track_pageview). */
const PAGE_VIEW_EVENT = '$mp_web_page_view';

/**
 * Our event as a Mixpanel record, or the reason it has none. Identities follow Mixpanel's
 * simplified ID merge: $device_id is the anonymous id, $user_id the known one, and an event
 * with both links them; distinct_id is the user id, or "$device:<anonymous id>".
 */
export function mixpanelRecordOf(outbound: OutboundEvent): MixpanelRecord | string {
  const { event, receipt } = outbound;
  const userId = userIdOf(event);
  const context = event.context ?? {};
  const campaign = context.campaign ?? {};
  const page = pageFields(event);
  const reserved = defined({
    time: eventTime(outbound).getTime(),
    distinct_id: userId ?? `$device:${event.anonymousId}`,
    $insert_id: mixpanelInsertId(event.messageId),
    $device_id: event.anonymousId,
    $user_id: userId,
    ip: receipt.ip ?? undefined,
    $current_url: page.url,
    $referrer: page.referrer,
    $browser: context.browser,
    $os: context.os,
    $user_agent: userAgentOf(outbound),
    utm_source: campaign.utm_source ?? campaign.source,
    utm_medium: campaign.utm_medium ?? campaign.medium,
    utm_campaign: campaign.utm_campaign ?? campaign.name,
    utm_term: campaign.utm_term ?? campaign.term,
    utm_content: campaign.utm_content ?? campaign.content,
  });
  switch (event.type) {
    case 'track':
      // Reserved keys last: a property named `time` or `distinct_id` must not replace ours.
      return { event: event.event, properties: { ...(event.properties ?? {}), ...reserved } };
    case 'page':
      return {
        event: PAGE_VIEW_EVENT,
        properties: {
          ...(event.properties ?? {}),
          ...defined({ current_page_title: page.title, current_url_path: page.path, page_name: page.name }),
          ...reserved,
        },
      };
    case 'screen':
      return { event: SCREEN_VIEWED, properties: { ...screenFields(event), ...reserved } };
    case 'identify':
      // Traits are profile properties, which are Mixpanel's Engage API; this links the ids.
      return {
        event: '$identify',
        properties: { ...reserved, $identified_id: event.userId, $anon_id: event.anonymousId },
      };
    case 'group':
      return 'group_not_supported: group profiles are Mixpanel’s Groups API, not the import API';
    case 'alias':
      return 'alias_not_supported: simplified ID merge links ids on identify and ignores $create_alias';
  }
}

/**
 * With strict=1 a 400 lists failed_records and still imports the others; Mixpanel says never
 * to retry a 400.
 */
function verdictOf(response: VendorResponse): Verdict {
  if (response.status >= 200 && response.status < 300) return { kind: 'accepted' };
  if (response.status === 413) return { kind: 'too_large' };
  const body = (response.json ?? {}) as Record<string, unknown>;
  if (response.status === 400 && Array.isArray(body.failed_records) && body.failed_records.length > 0) {
    const rejected: ItemRejection[] = [];
    for (const record of body.failed_records as Record<string, unknown>[]) {
      if (!Number.isInteger(record.index)) continue;
      const field = typeof record.field === 'string' ? record.field : 'record';
      const message = typeof record.message === 'string' ? record.message : 'rejected';
      rejected.push({ index: record.index as number, reason: `${field}: ${message}`, retryable: false });
    }
    if (rejected.length > 0) return { kind: 'accepted', rejected };
  }
  return { kind: 'failed', failure: failureOfStatus(response) };
}

interface MixpanelAuth {
  authorization: string;
  query: string;
}

/** A service account (with the project id), else the project token. */
function authOf(destination: ResolvedDestination): MixpanelAuth {
  const { credentials, appConfig } = destination;
  const account = optionalText(credentials, 'serviceAccount', 'credentials');
  const secret = optionalText(credentials, 'secret', 'credentials');
  const token = optionalText(credentials, 'projectToken', 'credentials');
  if (account && secret) {
    const projectId =
      optionalText(credentials, 'projectId', 'credentials') ??
      optionalText(appConfig, 'projectId', 'appConfig');
    if (!projectId) throw new InvalidConfig('a service account needs appConfig.projectId');
    return {
      authorization: basicAuth(account, secret),
      query: `strict=1&project_id=${encodeURIComponent(projectId)}`,
    };
  }
  if (token) return { authorization: basicAuth(token, ''), query: 'strict=1' };
  throw new InvalidConfig('credentials.projectToken (or serviceAccount and secret) is required');
}

/** Mixpanel's import API (`POST /import`). */
export class MixpanelForwarder implements Forwarder {
  readonly appType = 'mixpanel';

  constructor(private readonly client: VendorClientOptions) {}

  send(
    destination: ResolvedDestination,
    events: readonly OutboundEvent[],
    signal?: AbortSignal,
  ): Promise<SendOutcome> {
    return deliverAll(this.appType, events, { ...this.client, signal }, async (ledger) => {
      const auth = authOf(destination);
      const baseUrl = this.client.baseUrl ?? regionalHost(destination.appConfig, hosts);
      const endpoint: Endpoint<MixpanelRecord> = {
        limits,
        envelopeBytes: 2,
        request: (items) => ({
          method: 'POST',
          url: `${baseUrl}/import?${auth.query}`,
          headers: { 'Content-Type': 'application/json', Authorization: auth.authorization },
          body: JSON.stringify(items),
        }),
        verdict: verdictOf,
      };
      const mapped = ledger.mapEvents((outbound) => {
        const item = mixpanelRecordOf(outbound);
        return typeof item === 'string' ? item : [item];
      });
      await ledger.deliver(endpoint, mapped);
    });
  }
}
