import { AmplitudeDeletionClient } from './amplitude-deletion';
import { AmplitudeForwarder } from './amplitude-forwarder';
import { vendorClientOptions } from '../../forwarder';
import type { DeletionPollOutcome } from '../../subject-deletion';
import { oneOfEachType } from '../../testing/sample-events';
import {
  lookAlikeDestination,
  startLookAlikeVendor,
  type LookAlikeServer,
} from '../../testing/vendor-server';

const dayIn = (days: number) => new Date(Date.now() + days * 86_400_000).toISOString().slice(0, 10);

describe('Amplitude deletion client (User Privacy API look-alike)', () => {
  let server: LookAlikeServer;
  let client: AmplitudeDeletionClient;

  beforeEach(async () => {
    server = await startLookAlikeVendor('amplitude');
    client = new AmplitudeDeletionClient(vendorClientOptions({}, server.url));
  });
  afterEach(() => server.close());

  it('plans user ids only, 100 a request; anonymous ids (device ids) and emails are not sent', () => {
    const userIds = Array.from({ length: 250 }, (_, i) => `user-${i}`);
    const batches = client.plan({ userIds, anonymousIds: ['anon-1'], emails: ['a@b.co'] });
    expect(batches.map((b) => [b.index, b.idKind, b.ids.length])).toEqual([
      [0, 'user_id', 100],
      [1, 'user_id', 100],
      [2, 'user_id', 50],
    ]);
    expect(client.plan({ userIds: [], anonymousIds: ['anon-1'], emails: [] })).toEqual([]);
  });

  it('sends the documented request and is forwarded with the job day; polls until the job is done', async () => {
    const destination = lookAlikeDestination(server);
    // A user the project holds, and one it never saw.
    await new AmplitudeForwarder(vendorClientOptions({}, server.url)).send(destination, [
      oneOfEachType().identify,
    ]);
    const [batch] = client.plan({ userIds: ['user-42', 'never-seen'], anonymousIds: [], emails: [] });

    const outcome = await client.send(destination, batch!);

    const day = dayIn(10);
    expect(outcome).toEqual({ status: 'forwarded', vendorJobId: day });
    const request = server.requests.at(-1)!;
    expect(request.method).toBe('POST');
    expect(request.path).toBe('/api/2/deletions/users');
    expect(request.headers.authorization).toBe(
      `Basic ${Buffer.from('amp-test-key:amp-test-secret').toString('base64')}`,
    );
    expect(request.headers['content-type']).toBe('application/json');
    expect(JSON.parse(request.body)).toEqual({
      user_ids: ['user-42', 'never-seen'],
      requester: 'pipeline privacy regulation',
      ignore_invalid_id: true,
    });
    expect(server.accepted.filter((a) => a.endpoint === 'deletions').map((a) => a.item.user_id)).toEqual([
      'user-42',
    ]);

    const polls: DeletionPollOutcome[] = [];
    for (let i = 0; i < 5; i += 1) {
      const polled = await client.poll(
        destination,
        outcome.status === 'forwarded' ? outcome.vendorJobId : '',
      );
      polls.push(polled);
      if (polled.status !== 'forwarded') break;
    }
    // Listed as submitted, then done.
    expect(polls).toEqual([{ status: 'forwarded' }, { status: 'done' }]);
    const poll = server.requests.at(-1)!;
    expect(poll.method).toBe('GET');
    expect(poll.path).toBe('/api/2/deletions/users');
    expect(poll.query).toEqual({ start_day: day, end_day: day });
  });

  it('a job that never finishes stays forwarded; a day with no job fails the poll', async () => {
    server.rejectItems((item, endpoint) => endpoint === 'deletions' && item.user_id === 'user-42');
    const destination = lookAlikeDestination(server);
    await new AmplitudeForwarder(vendorClientOptions({}, server.url)).send(destination, [
      oneOfEachType().identify,
    ]);
    const outcome = await client.send(
      destination,
      client.plan({ userIds: ['user-42'], anonymousIds: [], emails: [] })[0]!,
    );
    expect(outcome.status).toBe('forwarded');
    for (let i = 0; i < 3; i += 1)
      expect(await client.poll(destination, dayIn(10))).toEqual({ status: 'forwarded' });
    expect(await client.poll(destination, dayIn(40))).toEqual({
      status: 'failed',
      code: 'job_not_found',
      message: `Amplitude lists no deletion job for ${dayIn(40)}`,
    });
    expect(await client.poll(destination, 'not-a-day')).toMatchObject({
      status: 'failed',
      code: 'job_not_found',
    });
  });

  it('polling: a refused key fails, a throttled vendor leaves the target forwarded', async () => {
    const destination = lookAlikeDestination(server);
    server.failNext({ status: 429, retryAfter: '3' });
    expect(await client.poll(destination, dayIn(10))).toEqual({ status: 'forwarded' });
    server.failNext({ status: 503 });
    expect(await client.poll(destination, dayIn(10))).toEqual({ status: 'forwarded' });
    const wrong = lookAlikeDestination(server, {
      credentials: { apiKey: 'amp-test-key', secretKey: 'nope' },
    });
    expect(await client.poll(wrong, dayIn(10))).toMatchObject({
      status: 'failed',
      code: 'credential_refused',
    });
    const without = lookAlikeDestination(server, { credentials: { apiKey: 'amp-test-key' } });
    expect(await client.poll(without, dayIn(10))).toMatchObject({
      status: 'failed',
      code: 'credential_missing',
    });
  });

  it('without the secret key: credential_missing, nothing sent', async () => {
    const destination = lookAlikeDestination(server, { credentials: { apiKey: 'amp-test-key' } });
    expect(client.missingCredential(destination)).toBe('secretKey');
    const [batch] = client.plan({ userIds: ['user-42'], anonymousIds: [], emails: [] });
    expect(await client.send(destination, batch!)).toMatchObject({
      status: 'failed',
      code: 'credential_missing',
    });
    expect(server.requests).toHaveLength(0);
  });

  it('the look-alike refuses more than 100 ids and unknown ids without ignore_invalid_id, as Amplitude does', async () => {
    const authorization = `Basic ${Buffer.from('amp-test-key:amp-test-secret').toString('base64')}`;
    const post = (body: unknown) =>
      fetch(`${server.url}/api/2/deletions/users`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', Authorization: authorization },
        body: JSON.stringify(body),
      });
    const tooMany = await post({
      user_ids: Array.from({ length: 101 }, (_, i) => `u${i}`),
      ignore_invalid_id: true,
    });
    expect(tooMany.status).toBe(400);
    expect(await tooMany.json()).toEqual({ error: 'Cannot delete more than 100 users in one request' });
    const unknown = await post({ user_ids: ['u1'] });
    expect(unknown.status).toBe(400);
    expect(server.accepted).toHaveLength(0);
  });

  it('a region Amplitude does not have is invalid_config, nothing sent', async () => {
    const batch = client.plan({ userIds: ['u'], anonymousIds: [], emails: [] })[0]!;
    // Without the operator's base URL, the region picks the host.
    const byRegion = new AmplitudeDeletionClient(vendorClientOptions({ fetch: globalThis.fetch }));
    expect(
      await byRegion.send(lookAlikeDestination(server, { appConfig: { region: 'mars' } }), batch),
    ).toEqual({
      status: 'failed',
      code: 'invalid_config',
      message: 'appConfig.region must be one of eu, not "mars"',
      retryable: false,
    });
    expect(server.requests).toHaveLength(0);
  });
});
