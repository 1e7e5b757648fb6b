import { CustomerIoDeletionClient } from './customer-io-deletion';
import { CustomerIoForwarder } from './customer-io-forwarder';
import { vendorClientOptions } from '../../forwarder';
import { oneOfEachType } from '../../testing/sample-events';
import {
  lookAlikeDestination,
  startLookAlikeVendor,
  type LookAlikeServer,
} from '../../testing/vendor-server';

describe('Customer.io deletion client (suppress look-alike)', () => {
  let server: LookAlikeServer;
  let client: CustomerIoDeletionClient;

  beforeEach(async () => {
    server = await startLookAlikeVendor('customer_io');
    client = new CustomerIoDeletionClient(vendorClientOptions({}, server.url));
  });
  afterEach(() => server.close());

  it('plans one user id a request', () => {
    expect(client.plan({ userIds: ['a', 'b'], anonymousIds: ['x'], emails: ['e@x.io'] })).toEqual([
      { index: 0, idKind: 'user_id', ids: ['a'] },
      { index: 1, idKind: 'user_id', ids: ['b'] },
    ]);
  });

  it('suppresses the person by id with Basic site_id:api_key, the id encoded in the path', async () => {
    const id = 'user/42 ü🧑‍🚀?';
    const [batch] = client.plan({ userIds: [id], anonymousIds: [], emails: [] });
    expect(await client.send(lookAlikeDestination(server), batch!)).toEqual({ status: 'done' });
    const [request] = server.requests;
    expect(request?.method).toBe('POST');
    expect(request?.path).toBe(`/api/v1/customers/${encodeURIComponent(id)}/suppress`);
    expect(request?.headers.authorization).toBe(
      `Basic ${Buffer.from('cio-site:cio-key').toString('base64')}`,
    );
    expect(server.accepted).toEqual([{ endpoint: 'suppress', item: { id } }]);
  });

  it('a suppressed person is refused afterwards: the next identify is answered but not ingested', async () => {
    const destination = lookAlikeDestination(server);
    const [batch] = client.plan({ userIds: ['user-42'], anonymousIds: [], emails: [] });
    expect(await client.send(destination, batch!)).toEqual({ status: 'done' });
    await new CustomerIoForwarder(vendorClientOptions({}, server.url)).send(destination, [
      oneOfEachType().identify,
    ]);
    expect(server.accepted.filter((a) => a.endpoint === 'batch')).toHaveLength(0);
    expect(server.dropped).toHaveLength(1);
  });

  it('an id over 150 bytes is refused by the vendor, not retried', async () => {
    const [batch] = client.plan({ userIds: ['x'.repeat(151)], anonymousIds: [], emails: [] });
    expect(await client.send(lookAlikeDestination(server), batch!)).toMatchObject({
      status: 'failed',
      code: 'vendor_refused',
      retryable: false,
    });
  });
});
