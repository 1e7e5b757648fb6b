import type { ResolvedDestination } from '@pipeline/tenancy';
import { deliverAll, type Endpoint, type Verdict } from '../../batch-delivery';
import { httpUrl, optionalText, requiredText } from '../../destination-settings';
import type { Forwarder, OutboundEvent, SendOutcome, VendorClientOptions } from '../../forwarder';
import { segmentMessageOf, type SegmentMessage } from '../../segment-message';
import { basicAuth, failureOfStatus, type VendorResponse } from '../../vendor-request';

const DEFAULT_HOST = 'https://api.segment.io';

/**
 * 500 KB and 2500 messages per batch, 32 KB per message. Segment answers 200 to a batch with
 * too many messages and drops them, so the count limit is ours to keep.
 */
const limits = { maxItems: 2500, maxBodyBytes: 500 * 1024, maxItemBytes: 32 * 1024 };

/** Segment answers 400 only to a batch it cannot read at all (too large, bad JSON). */
function verdictOf(response: VendorResponse): Verdict {
  if (response.status >= 200 && response.status < 300) return { kind: 'accepted' };
  return { kind: 'failed', failure: failureOfStatus(response) };
}

/**
 * The Segment HTTP tracking API (`POST /v1/batch`), or any service that speaks it
 * (`appConfig.endpoint`, e.g. a RudderStack data plane).
 */
export class SegmentForwarder implements Forwarder {
  readonly appType = 'segment';

  constructor(private readonly client: VendorClientOptions) {}

  send(
    destination: ResolvedDestination,
    events: readonly OutboundEvent[],
    signal?: AbortSignal,
  ): Promise<SendOutcome> {
    return deliverAll(this.appType, events, { ...this.client, signal }, async (ledger) => {
      const writeKey = requiredText(destination.credentials, 'writeKey', 'credentials');
      const configured = optionalText(destination.appConfig, 'endpoint', 'appConfig');
      const baseUrl =
        this.client.baseUrl ??
        (configured ? httpUrl(configured, 'appConfig.endpoint', { httpsOnly: true }) : DEFAULT_HOST);
      // The trailing colon: the write key is the user name of an empty password.
      const authorization = basicAuth(writeKey, '');
      const sentAtSample = new Date(0).toISOString();
      const endpoint: Endpoint<SegmentMessage> = {
        limits,
        envelopeBytes: Buffer.byteLength(JSON.stringify({ batch: [], sentAt: sentAtSample })),
        request: (items) => ({
          method: 'POST',
          url: `${baseUrl}/v1/batch`,
          headers: { 'Content-Type': 'application/json', Authorization: authorization },
          body: JSON.stringify({ batch: items, sentAt: new Date().toISOString() }),
        }),
        verdict: verdictOf,
      };
      const mapped = ledger.mapEvents((outbound) => [segmentMessageOf(outbound)]);
      await ledger.deliver(endpoint, mapped);
    });
  }
}
