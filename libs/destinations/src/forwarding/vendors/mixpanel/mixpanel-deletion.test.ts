import { MIXPANEL_DELETION_INTERVAL_MS, MixpanelDeletionClient } from './mixpanel-deletion';
import { vendorClientOptions } from '../../forwarder';
import type { DeletionPollOutcome, DeletionBatchOutcome } from '../../subject-deletion';
import {
  lookAlikeDestination,
  startLookAlikeVendor,
  type LookAlikeServer,
} from '../../testing/vendor-server';
import { waitFor } from '../../../testing/topic-records';

describe('Mixpanel deletion client (GDPR API look-alike)', () => {
  let server: LookAlikeServer;
  let client: MixpanelDeletionClient;

  beforeEach(async () => {
    server = await startLookAlikeVendor('mixpanel');
    client = new MixpanelDeletionClient(vendorClientOptions({}, server.url));
  });
  afterEach(() => server.close());

  const taskOf = (outcome: DeletionBatchOutcome) => {
    if (outcome.status !== 'forwarded') throw new Error(`not forwarded: ${JSON.stringify(outcome)}`);
    return outcome.vendorJobId;
  };

  /** Polls until the task leaves `forwarded`, at most five times. */
  async function settle(taskId: string): Promise<DeletionPollOutcome[]> {
    const polls: DeletionPollOutcome[] = [];
    for (let i = 0; i < 5; i += 1) {
      const polled = await client.poll(lookAlikeDestination(server), taskId);
      polls.push(polled);
      if (polled.status !== 'forwarded') break;
    }
    return polls;
  }

  it('plans user and anonymous ids (both distinct ids), 1999 a task, one request a second', () => {
    const userIds = Array.from({ length: 4_000 }, (_, i) => `user-${i}`);
    const batches = client.plan({ userIds, anonymousIds: ['anon-1', 'anon-2'], emails: ['a@b.co'] });
    expect(batches.map((b) => [b.index, b.idKind, b.ids.length])).toEqual([
      [0, 'user_id', 1999],
      [1, 'user_id', 1999],
      [2, 'user_id', 2],
      [3, 'anonymous_id', 2],
    ]);
    expect(client.minIntervalMs).toBe(1000);
  });

  it('creates a task with the documented request, then polls it to SUCCESS', async () => {
    const [batch] = client.plan({ userIds: ['user-42', 'ユーザー'], anonymousIds: [], emails: [] });
    const outcome = await client.send(lookAlikeDestination(server), batch!);
    const taskId = taskOf(outcome);

    const [create] = server.requests;
    expect(create?.method).toBe('POST');
    expect(create?.path).toBe('/api/app/data-deletions/v3.0/');
    expect(create?.query).toEqual({ token: 'mp-test-token' });
    expect(create?.headers.authorization).toBe('Bearer mp-gdpr-token');
    expect(create?.headers['content-type']).toBe('application/json');
    expect(JSON.parse(create!.body)).toEqual({
      distinct_ids: ['user-42', 'ユーザー'],
      compliance_type: 'GDPR',
    });
    expect(server.accepted.map((a) => a.item.distinct_id)).toEqual(['user-42', 'ユーザー']);

    expect(await settle(taskId)).toEqual([{ status: 'forwarded' }, { status: 'done' }]);
    const poll = server.requests.at(-1)!;
    expect(poll.method).toBe('GET');
    expect(poll.path).toBe(`/api/app/data-deletions/v3.0/${taskId}`);
    expect(poll.query).toEqual({ token: 'mp-test-token' });
    expect(poll.headers.authorization).toBe('Bearer mp-gdpr-token');
  });

  it('a task that ends in FAILURE fails the target; an unknown task is job_not_found', async () => {
    server.rejectItems((item, endpoint) => endpoint === 'data-deletions' && item.distinct_id === 'anon-9');
    const [batch] = client.plan({ userIds: [], anonymousIds: ['anon-9'], emails: [] });
    const taskId = taskOf(await client.send(lookAlikeDestination(server), batch!));
    expect(await settle(taskId)).toEqual([
      { status: 'forwarded' },
      { status: 'failed', code: 'vendor_task_failed', message: 'Mixpanel deletion task FAILURE' },
    ]);
    expect(await client.poll(lookAlikeDestination(server), 'no-such-task')).toEqual({
      status: 'failed',
      code: 'job_not_found',
      message: 'Mixpanel deletion task NOT_FOUND',
    });
  });

  it('a second task within the second is throttled with Retry-After; after minIntervalMs it goes', async () => {
    const batches = client.plan({ userIds: ['u1'], anonymousIds: ['a1'], emails: [] });
    const destination = lookAlikeDestination(server);
    const sentAt = Date.now();
    taskOf(await client.send(destination, batches[0]!));
    expect(await client.send(destination, batches[1]!)).toEqual({
      status: 'failed',
      code: 'rate_limited',
      message: 'http_429: Rate limit exceeded',
      retryable: true,
      retryAfterMs: 1000,
    });
    // Waiting as the caller does, for the client's interval since the first request.
    await waitFor(() => Date.now() - sentAt >= MIXPANEL_DELETION_INTERVAL_MS, 5_000, 'the interval');
    taskOf(await client.send(destination, batches[1]!));
    expect(server.accepted.map((a) => a.item.distinct_id)).toEqual(['u1', 'a1']);
  });

  it('without the GDPR token, or with a service account and no project token: credential_missing', async () => {
    const [batch] = client.plan({ userIds: ['u1'], anonymousIds: [], emails: [] });
    const noGdpr = lookAlikeDestination(server, { credentials: { projectToken: 'mp-test-token' } });
    expect(client.missingCredential(noGdpr)).toBe('gdprToken');
    expect(await client.send(noGdpr, batch!)).toMatchObject({ status: 'failed', code: 'credential_missing' });
    const account = lookAlikeDestination(server, {
      credentials: {
        serviceAccount: 'sa.test',
        secret: 'sa-secret',
        projectId: '31337',
        gdprToken: 'mp-gdpr-token',
      },
    });
    expect(client.missingCredential(account)).toBe('projectToken');
    expect(await client.poll(account, 'task')).toMatchObject({
      status: 'failed',
      code: 'credential_missing',
    });
    expect(server.requests).toHaveLength(0);
  });

  it('the look-alike refuses more than 1999 distinct ids, as Mixpanel does', async () => {
    const answer = await fetch(`${server.url}/api/app/data-deletions/v3.0/?token=mp-test-token`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Authorization: 'Bearer mp-gdpr-token' },
      body: JSON.stringify({ distinct_ids: Array.from({ length: 2000 }, (_, i) => `d${i}`) }),
    });
    expect(answer.status).toBe(400);
    expect(await answer.json()).toEqual({ status: 'error', error: 'distinct_ids must hold 1 to 1999 ids' });
  });
});
