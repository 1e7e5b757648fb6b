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
import type { OutboundEvent } from '../../forwarder';

// Pure: our event in, the vendor's payload or a skip reason out. The mutation tests mutate this
// whole file against its mapping test; the forwarder beside it does the HTTP.

/** An event of Amplitude's HTTP V2 API. */
export type AmplitudeEvent = Record<string, unknown> & { event_type: string; insert_id: string };

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
