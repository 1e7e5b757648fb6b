import { createHmac, timingSafeEqual } from 'node:crypto';

/** Headers of a signed webhook request (libs/destinations/README.md, "Forwarding destinations", Webhook). */
export const webhookHeaders = {
  /** Unix seconds when the request was signed. */
  timestamp: 'X-Signature-Timestamp',
  /** `sha256=<hex HMAC-SHA256 of "<timestamp>.<raw body>" with the signing secret>`. */
  signature: 'X-Signature',
  /** The same for every attempt to deliver the same events, for the receiver to deduplicate. */
  deliveryId: 'X-Delivery-Id',
} as const;

/** What receivers should accept between the signature's timestamp and their clock. */
export const DEFAULT_TOLERANCE_SECONDS = 300;

/**
 * The signature of a body sent at `timestamp`. The timestamp is inside the signed string, so
 * a captured request cannot be replayed later with a fresh timestamp.
 */
export function signWebhookBody(secret: string, timestamp: number, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(`${timestamp}.${body}`, 'utf8').digest('hex')}`;
}

/**
 * The headers of a signed JSON POST to a tenant's webhook, signed at `at`: the webhook
 * destination's batches and deletions, and the tracking plans' violation alerts.
 */
export function signedWebhookHeaders(
  secret: string,
  body: string,
  deliveryId: string,
  at: Date = new Date(),
): Record<string, string> {
  const timestamp = Math.floor(at.getTime() / 1000);
  return {
    'Content-Type': 'application/json',
    'User-Agent': 'pipeline-webhooks/1',
    [webhookHeaders.timestamp]: String(timestamp),
    [webhookHeaders.signature]: signWebhookBody(secret, timestamp, body),
    [webhookHeaders.deliveryId]: deliveryId,
  };
}

export interface WebhookVerification {
  secret: string;
  /** The raw body, exactly as received (before any JSON parsing). */
  body: string;
  timestamp: string | null | undefined;
  signature: string | null | undefined;
  toleranceSeconds?: number;
  now?: Date;
}

/** What a receiver runs: true when the signature matches and the timestamp is recent. */
export function verifyWebhookSignature(input: WebhookVerification): boolean {
  const { secret, body, timestamp, signature } = input;
  if (!timestamp || !signature || !/^\d+$/.test(timestamp)) return false;
  const now = Math.floor((input.now ?? new Date()).getTime() / 1000);
  if (Math.abs(now - Number(timestamp)) > (input.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS)) return false;
  const expected = Buffer.from(signWebhookBody(secret, Number(timestamp), body));
  const given = Buffer.from(signature);
  return given.length === expected.length && timingSafeEqual(given, expected);
}
