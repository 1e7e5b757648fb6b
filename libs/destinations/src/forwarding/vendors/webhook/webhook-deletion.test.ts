import { webhookDeleteMessageId, WebhookDeletionClient } from './webhook-deletion';
import { verifyWebhookSignature, webhookHeaders } from './webhook-signature';
import { vendorClientOptions } from '../../forwarder';
import {
  lookAlikeDestination,
  startLookAlikeVendor,
  type LookAlikeServer,
} from '../../testing/vendor-server';

describe('webhook deletion client (signed delete messages)', () => {
  let server: LookAlikeServer;
  // The receiver is on 127.0.0.1: the plain fetch, as the forwarder's tests use.
  const client = new WebhookDeletionClient(vendorClientOptions({ fetch: globalThis.fetch }));

  beforeEach(async () => {
    server = await startLookAlikeVendor('webhook');
  });
  afterEach(() => server.close());

  it('POSTs one signed {"type":"delete"} per id, user ids as userId and anonymous ids as anonymousId', async () => {
    const batches = client.plan({ userIds: ['user-42'], anonymousIds: ['anon-7'], emails: ['a@b.co'] });
    expect(batches.map((b) => [b.idKind, b.ids])).toEqual([
      ['user_id', ['user-42']],
      ['anonymous_id', ['anon-7']],
    ]);
    for (const batch of batches)
      expect(await client.send(lookAlikeDestination(server), batch)).toEqual({ status: 'done' });

    expect(server.requests).toHaveLength(2);
    const bodies = server.requests.map((request) => {
      expect(request.method).toBe('POST');
      expect(request.path).toBe('/hooks/events');
      expect(request.headers['content-type']).toBe('application/json');
      expect(
        verifyWebhookSignature({
          secret: 'whsec-test-secret',
          body: request.body,
          timestamp: request.headers[webhookHeaders.timestamp.toLowerCase()] as string,
          signature: request.headers[webhookHeaders.signature.toLowerCase()] as string,
        }),
      ).toBe(true);
      expect(
        verifyWebhookSignature({
          secret: 'another-secret',
          body: request.body,
          timestamp: request.headers[webhookHeaders.timestamp.toLowerCase()] as string,
          signature: request.headers[webhookHeaders.signature.toLowerCase()] as string,
        }),
      ).toBe(false);
      return JSON.parse(request.body) as Record<string, unknown>;
    });
    expect(bodies).toEqual([
      {
        type: 'delete',
        userId: 'user-42',
        messageId: webhookDeleteMessageId('user_id', 'user-42'),
        timestamp: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/),
      },
      {
        type: 'delete',
        anonymousId: 'anon-7',
        messageId: webhookDeleteMessageId('anonymous_id', 'anon-7'),
        timestamp: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/),
      },
    ]);
    expect(server.accepted.map((a) => a.endpoint)).toEqual(['delete', 'delete']);
  });

  it('a retried deletion carries the same message id and delivery id', async () => {
    const [batch] = client.plan({ userIds: ['user-42'], anonymousIds: [], emails: [] });
    server.failNext({ status: 503 });
    expect(await client.send(lookAlikeDestination(server), batch!)).toMatchObject({ retryable: true });
    expect(await client.send(lookAlikeDestination(server), batch!)).toEqual({ status: 'done' });
    const [first, second] = server.requests;
    expect(JSON.parse(first!.body).messageId).toBe(JSON.parse(second!.body).messageId);
    expect(first!.headers['x-delivery-id']).toBe(second!.headers['x-delivery-id']);
    expect(webhookDeleteMessageId('user_id', 'x')).not.toBe(webhookDeleteMessageId('anonymous_id', 'x'));
  });

  it('a redirect is not followed: refused, not retried', async () => {
    server.failNext({ status: 302, headers: { Location: 'https://elsewhere.example/' } });
    const [batch] = client.plan({ userIds: ['user-42'], anonymousIds: [], emails: [] });
    expect(await client.send(lookAlikeDestination(server), batch!)).toEqual({
      status: 'failed',
      code: 'vendor_refused',
      message: 'redirect_not_followed: http_302',
      retryable: false,
    });
    expect(server.requests).toHaveLength(1);
  });

  it('an internal address is refused by the guarded fetch', async () => {
    const guarded = new WebhookDeletionClient(vendorClientOptions({}));
    const [batch] = guarded.plan({ userIds: ['user-42'], anonymousIds: [], emails: [] });
    expect(await guarded.send(lookAlikeDestination(server), batch!)).toMatchObject({
      status: 'failed',
      code: 'network',
      retryable: false,
    });
    expect(server.requests).toHaveLength(0);
  });
});
