import type { ResolvedDestination } from '@pipeline/tenancy';
import { deliverAll, type Endpoint, type ItemRejection, type Verdict } from '../../batch-delivery';
import { ulidOf } from '../../dedupe-keys';
import { optionalText, regionalHost, requiredText } from '../../destination-settings';
import { defined, eventTime, pageFields, userIdOf } from '../../event-fields';
import type { Forwarder, OutboundEvent, SendOutcome, VendorClientOptions } from '../../forwarder';
import { basicAuth, failureOfStatus, type VendorResponse } from '../../vendor-request';

/** One operation of Customer.io's Track v2 batch. */
export type CustomerIoOperation = Record<string, unknown> & { type: 'person' | 'object'; action: string };

const hosts = { default: 'https://track.customer.io', eu: 'https://track-eu.customer.io' };

/**
 * `/api/v2/batch` takes under 500 KB, each operation 32 KB at most; no count is documented,
 * so 1000 keeps a failed request's blast radius small.
 */
const limits = { maxItems: 1000, maxBodyBytes: 500_000, maxItemBytes: 32 * 1024 };

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

/** 207: the listed operations were invalid and all the others accepted. */
function verdictOf(response: VendorResponse): Verdict {
  if (response.status === 207) {
    const body = (response.json ?? {}) as Record<string, unknown>;
    const rejected: ItemRejection[] = [];
    for (const error of Array.isArray(body.errors) ? (body.errors as Record<string, unknown>[]) : []) {
      if (!Number.isInteger(error.batch_index)) continue;
      const why = [error.reason, error.field, error.message]
        .filter((part) => typeof part === 'string')
        .join(' ');
      rejected.push({ index: error.batch_index as number, reason: `invalid: ${why}`, retryable: false });
    }
    return { kind: 'accepted', rejected };
  }
  if (response.status >= 200 && response.status < 300) return { kind: 'accepted' };
  if (response.status === 413) return { kind: 'too_large' };
  return { kind: 'failed', failure: failureOfStatus(response) };
}

/** Customer.io Track API v2 (`POST /api/v2/batch`). */
export class CustomerIoForwarder implements Forwarder {
  readonly appType = 'customer_io';

  constructor(private readonly client: VendorClientOptions) {}

  send(
    destination: ResolvedDestination,
    events: readonly OutboundEvent[],
    signal?: AbortSignal,
  ): Promise<SendOutcome> {
    return deliverAll(this.appType, events, { ...this.client, signal }, async (ledger) => {
      const siteId = requiredText(destination.credentials, 'siteId', 'credentials');
      const apiKey = requiredText(destination.credentials, 'apiKey', 'credentials');
      const baseUrl = this.client.baseUrl ?? regionalHost(destination.appConfig, hosts);
      const objectTypeId = optionalText(destination.config.global, 'objectTypeId', 'config.global') ?? '1';
      const authorization = basicAuth(siteId, apiKey);
      const endpoint: Endpoint<CustomerIoOperation> = {
        limits,
        envelopeBytes: Buffer.byteLength(JSON.stringify({ batch: [] })),
        request: (items) => ({
          method: 'POST',
          url: `${baseUrl}/api/v2/batch`,
          headers: { 'Content-Type': 'application/json', Authorization: authorization },
          body: JSON.stringify({ batch: items }),
        }),
        verdict: verdictOf,
      };
      const mapped = ledger.mapEvents((outbound) => {
        const item = customerIoOperationOf(outbound, objectTypeId);
        return typeof item === 'string' ? item : [item];
      });
      await ledger.deliver(endpoint, mapped);
    });
  }
}
