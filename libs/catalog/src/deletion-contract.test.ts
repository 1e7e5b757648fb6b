import {
  lookAlikeDestination,
  startLookAlikeVendor,
  type LookAlikeServer,
  type LookAlikeVendor,
} from '@pipeline/destinations/testing';
import { deletionClientFor, forwardingAppTypes } from './catalog';

/** The operator setting that lets tenant URLs (the webhook's) reach these local servers. */
const loopback = ['127.0.0.0/8'];

const subjects = { userIds: ['user-42'], anonymousIds: ['anon-7'], emails: ['ada@example.com'] };

// The catalog's deletion clients, built as the privacy worker builds them (with the operator's
// base URLs), each against its vendor's look-alike.
const deleting = forwardingAppTypes.filter((appType) => deletionClientFor(appType) !== undefined);

describe.each(deleting.map((appType) => [appType]))('%s deletion through the catalog', (appType) => {
  let server: LookAlikeServer;

  beforeEach(async () => {
    server = await startLookAlikeVendor(appType as LookAlikeVendor);
  });
  afterEach(() => server.close());

  it('reaches the look-alike with the operator’s base URL and is accepted', async () => {
    const client = deletionClientFor(appType, {
      baseUrls: { [appType]: server.url },
      allowPrivateRanges: loopback,
    })!;
    const [batch] = client.plan(subjects);
    const outcome = await client.send(lookAlikeDestination(server), batch!);
    expect(['done', 'forwarded']).toContain(outcome.status);
    expect(outcome.status === 'forwarded').toBe(client.poll !== undefined);
    expect(server.requests).toHaveLength(1);
  });
});

it('deletes at seven vendors', () => {
  expect(deleting).toEqual([
    'hubspot',
    'amplitude',
    'mixpanel',
    'braze',
    'customer_io',
    'onesignal',
    'webhook',
  ]);
});
