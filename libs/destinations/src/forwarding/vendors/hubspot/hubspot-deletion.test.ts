import { HubSpotDeletionClient } from './hubspot-deletion';
import { vendorClientOptions } from '../../forwarder';
import {
  lookAlikeDestination,
  startLookAlikeVendor,
  type LookAlikeServer,
} from '../../testing/vendor-server';

describe('HubSpot deletion client (GDPR delete look-alike)', () => {
  let server: LookAlikeServer;
  let client: HubSpotDeletionClient;

  beforeEach(async () => {
    server = await startLookAlikeVendor('hubspot');
    client = new HubSpotDeletionClient(vendorClientOptions({}, server.url));
  });
  afterEach(() => server.close());

  it('plans the captured emails only, one a request; no email means nothing to send', () => {
    expect(
      client.plan({ userIds: ['user-42'], anonymousIds: ['anon'], emails: ['ada@example.com', 'b@x.io'] }),
    ).toEqual([
      { index: 0, idKind: 'email', ids: ['ada@example.com'] },
      { index: 1, idKind: 'email', ids: ['b@x.io'] },
    ]);
    expect(client.plan({ userIds: ['user-42'], anonymousIds: ['anon'], emails: [] })).toEqual([]);
  });

  it('deletes the contact by the email the warehouse held: 204 is done', async () => {
    const [batch] = client.plan({ userIds: ['user-42'], anonymousIds: [], emails: ['ada@example.com'] });
    expect(await client.send(lookAlikeDestination(server), batch!)).toEqual({ status: 'done' });
    const [request] = server.requests;
    expect(request?.method).toBe('POST');
    expect(request?.path).toBe('/crm/v3/objects/contacts/gdpr-delete');
    expect(request?.headers.authorization).toBe('Bearer pat-na1-look-alike');
    expect(request?.headers['content-type']).toBe('application/json');
    expect(JSON.parse(request!.body)).toEqual({ objectId: 'ada@example.com', idProperty: 'email' });
    expect(request?.status).toBe(204);
    expect(server.accepted).toEqual([
      { endpoint: 'contacts/gdpr-delete', item: { objectId: 'ada@example.com', idProperty: 'email' } },
    ]);
  });

  it('an email HubSpot finds invalid is refused, not retried, and not repeated in the message', async () => {
    const [batch] = client.plan({ userIds: [], anonymousIds: [], emails: ['not-an-email'] });
    const outcome = await client.send(lookAlikeDestination(server), batch!);
    expect(outcome).toEqual({
      status: 'failed',
      code: 'vendor_refused',
      message: 'http_400: Email address [redacted] is invalid',
      retryable: false,
    });
  });

  it('a 429 without Retry-After waits HubSpot’s ten-second window', async () => {
    server.failNext({ status: 429 });
    const [batch] = client.plan({ userIds: [], anonymousIds: [], emails: ['ada@example.com'] });
    expect(await client.send(lookAlikeDestination(server), batch!)).toMatchObject({
      code: 'rate_limited',
      retryable: true,
      retryAfterMs: 10_000,
    });
  });
});
