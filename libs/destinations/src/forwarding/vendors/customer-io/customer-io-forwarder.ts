import type { ResolvedDestination } from '@pipeline/tenancy';
import { deliverAll, type Endpoint, type ItemRejection, type Verdict } from '../../batch-delivery';
import { optionalText, regionalHost, requiredText } from '../../destination-settings';
import type { Forwarder, OutboundEvent, SendOutcome, VendorClientOptions } from '../../forwarder';
import { basicAuth, failureOfStatus, type VendorResponse } from '../../vendor-request';
import { customerIoOperationOf, type CustomerIoOperation } from './customer-io-mapping';

const hosts = { default: 'https://track.customer.io', eu: 'https://track-eu.customer.io' };

/**
 * `/api/v2/batch` takes under 500 KB, each operation 32 KB at most; no count is documented,
 * so 1000 keeps a failed request's blast radius small.
 */
const limits = { maxItems: 1000, maxBodyBytes: 500_000, maxItemBytes: 32 * 1024 };

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
