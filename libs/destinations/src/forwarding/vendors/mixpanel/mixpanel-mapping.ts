import { mixpanelInsertId } from '../../dedupe-keys';
import {
  defined,
  eventTime,
  pageFields,
  SCREEN_VIEWED,
  screenFields,
  userAgentOf,
  userIdOf,
} from '../../event-fields';
import type { OutboundEvent } from '../../forwarder';

// Pure: our event in, the vendor's payload or a skip reason out. The mutation tests mutate this
// whole file against its mapping test; the forwarder beside it does the HTTP.

/** A record of Mixpanel's import API. */
export interface MixpanelRecord {
  event: string;
  properties: Record<string, unknown>;
}

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
