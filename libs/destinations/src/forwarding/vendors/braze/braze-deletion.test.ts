import { BrazeDeletionClient } from './braze-deletion';
import { BrazeForwarder } from './braze-forwarder';
import { vendorClientOptions } from '../../forwarder';
import { oneOfEachType } from '../../testing/sample-events';
import {
  lookAlikeDestination,
  startLookAlikeVendor,
  type LookAlikeServer,
} from '../../testing/vendor-server';

describe('Braze deletion client (/users/delete look-alike)', () => {
  let server: LookAlikeServer;
  let client: BrazeDeletionClient;

  beforeEach(async () => {
    server = await startLookAlikeVendor('braze');
    client = new BrazeDeletionClient(vendorClientOptions({}, server.url));
  });
  afterEach(() => server.close());

  it('plans external ids (user ids) only, 50 a request', () => {
    const userIds = Array.from({ length: 120 }, (_, i) => `user-${i}`);
    expect(
      client.plan({ userIds, anonymousIds: ['anon'], emails: ['a@b.co'] }).map((b) => b.ids.length),
    ).toEqual([50, 50, 20]);
  });

  it('deletes by external_ids with the REST key: done', async () => {
    const destination = lookAlikeDestination(server);
    await new BrazeForwarder(vendorClientOptions({}, server.url)).send(destination, [
      oneOfEachType().identify,
    ]);
    const [batch] = client.plan({ userIds: ['user-42', 'unknown-1'], anonymousIds: [], emails: [] });

    expect(await client.send(destination, batch!)).toEqual({ status: 'done' });

    const request = server.requests.at(-1)!;
    expect(request.method).toBe('POST');
    expect(request.path).toBe('/users/delete');
    expect(request.headers.authorization).toBe('Bearer braze-test-key');
    expect(request.headers['content-type']).toBe('application/json');
    expect(JSON.parse(request.body)).toEqual({ external_ids: ['user-42', 'unknown-1'] });
    expect(request.status).toBe(201);
    expect(server.accepted.filter((a) => a.endpoint === 'users/delete').map((a) => a.item)).toEqual([
      { external_id: 'user-42' },
      { external_id: 'unknown-1' },
    ]);
  });

  it('a 404 (no such profiles) counts as done', async () => {
    server.failNext({ status: 404, body: { message: 'No users found' } });
    const [batch] = client.plan({ userIds: ['gone'], anonymousIds: [], emails: [] });
    expect(await client.send(lookAlikeDestination(server), batch!)).toEqual({ status: 'done' });
  });

  it('a 429 without Retry-After waits until X-RateLimit-Reset', async () => {
    const reset = Math.ceil(Date.now() / 1000) + 30;
    server.failNext({ status: 429, headers: { 'X-RateLimit-Reset': String(reset) } });
    const [batch] = client.plan({ userIds: ['u'], anonymousIds: [], emails: [] });
    const outcome = await client.send(lookAlikeDestination(server), batch!);
    expect(outcome).toMatchObject({ status: 'failed', code: 'rate_limited', retryable: true });
    const wait = outcome.status === 'failed' ? (outcome.retryAfterMs ?? 0) : 0;
    expect(wait).toBeGreaterThan(25_000);
    expect(wait).toBeLessThanOrEqual(31_000);
  });

  it('a tenant endpoint outside Braze is invalid_config, nothing sent', async () => {
    const destination = lookAlikeDestination(server, {
      appConfig: { restEndpoint: 'https://evil.example.com' },
    });
    const [batch] = client.plan({ userIds: ['u'], anonymousIds: [], emails: [] });
    expect(await client.send(destination, batch!)).toMatchObject({
      status: 'failed',
      code: 'invalid_config',
    });
    expect(server.requests).toHaveLength(0);
  });

  it('the look-alike refuses 51 ids and a second kind of identifier, as Braze does', async () => {
    const post = (body: unknown) =>
      fetch(`${server.url}/users/delete`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Authorization: 'Bearer braze-test-key' },
        body: JSON.stringify(body),
      });
    const tooMany = await post({ external_ids: Array.from({ length: 51 }, (_, i) => `u${i}`) });
    expect([tooMany.status, await tooMany.json()]).toEqual([400, { message: 'Max Input Length Exceeded' }]);
    const mixed = await post({ external_ids: ['u'], braze_ids: ['b'] });
    expect(mixed.status).toBe(400);
  });
});
