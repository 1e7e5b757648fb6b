import { createHmac } from 'node:crypto';
import {
  DEFAULT_TOLERANCE_SECONDS,
  signWebhookBody,
  verifyWebhookSignature,
  webhookHeaders,
} from './webhook-signature';

const body = '{"batch":[],"sentAt":"2026-03-01T12:00:00.000Z"}';
const signedAt = 1_772_366_400;
const now = new Date(signedAt * 1000);
// Computed with node:crypto's HMAC directly, as a receiver in any language would.
const expected = `sha256=${createHmac('sha256', 's3cret').update(`${signedAt}.${body}`).digest('hex')}`;

describe('webhook signatures', () => {
  it('sign "<timestamp>.<body>" with HMAC-SHA256 of the secret, hex, prefixed sha256=', () => {
    expect(signWebhookBody('s3cret', signedAt, body)).toBe(expected);
    expect(expected).toMatch(/^sha256=[0-9a-f]{64}$/);
    expect(webhookHeaders).toEqual({
      timestamp: 'X-Signature-Timestamp',
      signature: 'X-Signature',
      deliveryId: 'X-Delivery-Id',
    });
    expect(DEFAULT_TOLERANCE_SECONDS).toBe(300);
  });

  const check = (overrides: Partial<Parameters<typeof verifyWebhookSignature>[0]>) =>
    verifyWebhookSignature({
      secret: 's3cret',
      body,
      timestamp: String(signedAt),
      signature: expected,
      now,
      ...overrides,
    });

  it('accepts the signature of the body, secret and timestamp, within the tolerance either way', () => {
    expect(check({})).toBe(true);
    expect(check({ now: new Date((signedAt + 300) * 1000) })).toBe(true);
    expect(check({ now: new Date((signedAt - 300) * 1000) })).toBe(true);
    expect(check({ now: new Date((signedAt + 10) * 1000), toleranceSeconds: 10 })).toBe(true);
  });

  it('refuses another secret, body, timestamp or signature, and a replay past the tolerance', () => {
    expect([
      check({ secret: 'other' }),
      check({ body: `${body} ` }),
      check({ timestamp: String(signedAt + 1) }),
      check({ signature: expected.replace(/.$/, (c) => (c === '0' ? '1' : '0')) }),
      check({ signature: `${expected}0` }),
      check({ signature: expected.slice(7) }),
      check({ now: new Date((signedAt + 301) * 1000) }),
      check({ now: new Date((signedAt - 301) * 1000) }),
      check({ now: new Date((signedAt + 11) * 1000), toleranceSeconds: 10 }),
    ]).toEqual([false, false, false, false, false, false, false, false, false]);
  });

  it('refuses a missing or malformed timestamp or signature', () => {
    expect([
      check({ timestamp: null }),
      check({ timestamp: undefined }),
      check({ timestamp: '' }),
      check({ timestamp: `${signedAt}.5` }),
      check({ timestamp: `x${signedAt}` }),
      check({ timestamp: `${signedAt}x` }),
      check({ signature: null }),
      check({ signature: '' }),
    ]).toEqual([false, false, false, false, false, false, false, false]);
  });

  it('refuses a timestamp with anything around its digits, even with the signature of what it parses to', () => {
    const ofNaN = signWebhookBody('s3cret', Number.NaN, body);
    expect(
      [`x${signedAt}`, `${signedAt}x`, ` ${signedAt}`].map((timestamp) =>
        check({ timestamp, signature: ofNaN }),
      ),
    ).toEqual([false, false, false]);
  });

  it('checks against the current time when not told', () => {
    const fresh = Math.floor(Date.now() / 1000);
    const signature = signWebhookBody('s3cret', fresh, body);
    expect(verifyWebhookSignature({ secret: 's3cret', body, timestamp: String(fresh), signature })).toBe(
      true,
    );
    expect(check({ now: undefined })).toBe(false);
  });
});
