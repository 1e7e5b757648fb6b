import { createHash } from 'node:crypto';
import type { ResolvedDestination } from '@pipeline/tenancy';
import { deliverAll, type Endpoint, type Verdict } from '../../batch-delivery';
import { requiredText } from '../../destination-settings';
import type { Forwarder, OutboundEvent, SendOutcome, VendorClientOptions } from '../../forwarder';
import { segmentMessageOf, type SegmentMessage } from '../../segment-message';
import { failureOfStatus, type VendorResponse } from '../../vendor-request';
import { signedWebhookHeaders } from './webhook-signature';
import { webhookUrl } from './webhook-url';

/** Receivers are customers' servers: modest requests (100 events, 512 KB). */
const limits = { maxItems: 100, maxBodyBytes: 512 * 1024 };

function verdictOf(response: VendorResponse): Verdict {
  if (response.status >= 200 && response.status < 300) return { kind: 'accepted' };
  if (response.status >= 300 && response.status < 400) {
    return {
      kind: 'failed',
      failure: {
        reason: `redirect_not_followed: http_${response.status}`,
        retryable: false,
        status: response.status,
      },
    };
  }
  if (response.status === 413) return { kind: 'too_large' };
  return { kind: 'failed', failure: failureOfStatus(response) };
}

/**
 * A generic webhook: `POST <url>` with `{"batch":[<Segment-spec messages>],"sentAt":...}`,
 * signed with HMAC-SHA256 (see webhook-signature.ts). Redirects are not followed.
 */
export class WebhookForwarder implements Forwarder {
  readonly appType = 'webhook';

  constructor(private readonly client: VendorClientOptions) {}

  send(
    destination: ResolvedDestination,
    events: readonly OutboundEvent[],
    signal?: AbortSignal,
  ): Promise<SendOutcome> {
    const http = { ...this.client, signal, redirect: 'manual' as const };
    return deliverAll(this.appType, events, http, async (ledger) => {
      const url = webhookUrl(destination.appConfig, destination.config.global);
      const secret = requiredText(destination.credentials, 'signingSecret', 'credentials');
      const endpoint: Endpoint<SegmentMessage> = {
        limits,
        envelopeBytes: Buffer.byteLength(JSON.stringify({ batch: [], sentAt: new Date(0).toISOString() })),
        request: (items) => {
          const now = new Date();
          const body = JSON.stringify({ batch: items, sentAt: now.toISOString() });
          const deliveryId = createHash('sha256')
            .update(items.map((item) => item.messageId).join('\n'))
            .digest('hex')
            .slice(0, 32);
          return {
            method: 'POST',
            url,
            headers: signedWebhookHeaders(secret, body, deliveryId, now),
            body,
          };
        },
        verdict: verdictOf,
      };
      const mapped = ledger.mapEvents((outbound) => [segmentMessageOf(outbound)]);
      await ledger.deliver(endpoint, mapped);
    });
  }
}
