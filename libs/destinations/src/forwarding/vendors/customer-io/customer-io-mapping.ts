import { ulidOf } from '../../dedupe-keys';
import { defined, eventTime, pageFields, userIdOf } from '../../event-fields';
import type { OutboundEvent } from '../../forwarder';

// Pure: our event in, the vendor's payload or a skip reason out. The mutation tests mutate this
// whole file against its mapping test; the forwarder beside it does the HTTP.

/** One operation of Customer.io's Track v2 batch. */
export type CustomerIoOperation = Record<string, unknown> & { type: 'person' | 'object'; action: string };

const seconds = (date: Date) => Math.floor(date.getTime() / 1000);

/** created_at is unix seconds at Customer.io; traits carry it as an ISO time or a number. */
function personAttributesOf(traits: Record<string, unknown>): Record<string, unknown> {
  const { createdAt, created_at, ...rest } = traits;
  const created = createdAt ?? created_at;
  let createdSeconds: number | undefined;
  if (typeof created === 'number') createdSeconds = created > 1e12 ? Math.floor(created / 1000) : created;
  else if (typeof created === 'string' && !Number.isNaN(Date.parse(created))) {
    createdSeconds = seconds(new Date(created));
  }
  return { ...rest, ...defined({ created_at: createdSeconds }) };
}

/**
 * Our event as a Track v2 operation, or the reason it has none. `objectTypeId` is the object
 * type a group call identifies (integration config `global.objectTypeId`, default "1").
 */
export function customerIoOperationOf(
  outbound: OutboundEvent,
  objectTypeId: string,
): CustomerIoOperation | string {
  const { event } = outbound;
  const userId = userIdOf(event);
  const time = eventTime(outbound);
  if (!userId) {
    return 'anonymous: Track v2 operations need a person identifier; anonymous events are v1 calls, one per event';
  }
  const person = { type: 'person' as const, identifiers: { id: userId } };
  switch (event.type) {
    case 'track':
      return {
        ...person,
        action: 'event',
        id: ulidOf(event.messageId, time.getTime()),
        name: event.event,
        timestamp: seconds(time),
        attributes: event.properties ?? {},
      };
    case 'page': {
      const page = pageFields(event);
      const name = page.url ?? page.path ?? page.name;
      if (!name) return 'page_without_url: Customer.io names a page view by its URL';
      return {
        ...person,
        action: 'page',
        id: ulidOf(event.messageId, time.getTime()),
        name,
        timestamp: seconds(time),
        attributes: { ...page, ...(event.properties ?? {}) },
      };
    }
    case 'screen': {
      if (!event.name) return 'screen_without_name: Customer.io names a screen view by its name';
      return {
        ...person,
        action: 'screen',
        id: ulidOf(event.messageId, time.getTime()),
        name: event.name,
        timestamp: seconds(time),
        attributes: event.properties ?? {},
      };
    }
    case 'identify':
      return {
        ...person,
        action: 'identify',
        timestamp: seconds(time),
        attributes: personAttributesOf(event.traits ?? {}),
      };
    case 'group':
      return {
        type: 'object',
        identifiers: { object_type_id: objectTypeId, object_id: event.groupId },
        action: 'identify',
        attributes: event.traits ?? {},
        cio_relationships: [{ identifiers: { id: userId } }],
      };
    case 'alias':
      return 'alias_not_supported: Customer.io merges by deleting the secondary person, which cannot be undone';
  }
}
