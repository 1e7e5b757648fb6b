import { MixpanelForwarder } from './mixpanel-forwarder';
import { mixpanelInsertId } from '../../dedupe-keys';
import { type Forwarder, vendorClientOptions } from '../../forwarder';
import { bulkyEvents, correctedSampleTime, oneOfEachType, sampleEvent } from '../../testing/sample-events';
import {
  lookAlikeDestination,
  startLookAlikeVendor,
  type LookAlikeServer,
} from '../../testing/vendor-server';

describe('Mixpanel forwarder (import API look-alike)', () => {
  let server: LookAlikeServer;
  let forwarder: Forwarder;

  beforeEach(async () => {
    server = await startLookAlikeVendor('mixpanel');
    forwarder = new MixpanelForwarder(vendorClientOptions({}, server.url));
  });
  afterEach(() => server.close());

  it('maps track, page, screen and identify to documented records; group and alias are skipped with reasons', async () => {
    const events = oneOfEachType();
    const outcome = await forwarder.send(lookAlikeDestination(server), Object.values(events));

    expect(outcome.sent).toBe(4);
    expect(outcome.skipped.map((s) => [s.messageId, s.reason.split(':')[0]])).toEqual([
      [events.group.event.messageId, 'group_not_supported'],
      [events.alias.event.messageId, 'alias_not_supported'],
    ]);
    const [request] = server.requests;
    expect(request?.path).toBe('/import');
    expect(request?.query).toEqual({ strict: '1' });
    expect(request?.headers.authorization).toBe(`Basic ${Buffer.from('mp-test-token:').toString('base64')}`);

    const identity = {
      time: correctedSampleTime.getTime(),
      distinct_id: 'user-42',
      $device_id: 'anon-1234',
      $user_id: 'user-42',
      ip: '198.51.100.7',
      $current_url: 'https://shop.example/pricing?x=1',
      $referrer: 'https://ref.example/',
      $os: 'macOS',
      $user_agent: 'Mozilla/5.0 (look-alike)',
    };
    expect(server.accepted.map((a) => a.item)).toEqual([
      {
        event: 'Plan Upgraded',
        properties: { plan: 'pro', seats: 3, ...identity, $insert_id: events.track.event.messageId },
      },
      {
        event: '$mp_web_page_view',
        properties: {
          variant: 'b',
          current_page_title: 'Pricing',
          current_url_path: '/pricing',
          page_name: 'Pricing',
          ...identity,
          $insert_id: events.page.event.messageId,
        },
      },
      {
        event: '$identify',
        properties: {
          ...identity,
          $insert_id: events.identify.event.messageId,
          $identified_id: 'user-42',
          $anon_id: 'anon-1234',
        },
      },
      {
        event: 'Screen Viewed',
        properties: { name: 'Checkout', step: 2, ...identity, $insert_id: events.screen.event.messageId },
      },
    ]);
  });

  it('keys anonymous events by $device:<anonymous id>, and our reserved properties win over the event’s', async () => {
    const event = sampleEvent({
      type: 'track',
      event: 'Viewed',
      properties: { time: 1, distinct_id: 'spoof' },
    });
    await forwarder.send(lookAlikeDestination(server), [event]);
    expect(server.accepted[0]?.item.properties).toMatchObject({
      distinct_id: '$device:anon-1234',
      time: correctedSampleTime.getTime(),
    });
    expect(server.accepted[0]?.item.properties).not.toHaveProperty('$user_id');
  });

  it('derives a valid $insert_id from a messageId Mixpanel would refuse, the same on every attempt', async () => {
    const long = sampleEvent({ type: 'track', event: 'E', messageId: 'm'.repeat(37) });
    const odd = sampleEvent({ type: 'track', event: 'E', messageId: 'order:88231/1' });
    await forwarder.send(lookAlikeDestination(server), [long, odd]);
    const ids = server.accepted.map((a) => (a.item.properties as Record<string, string>).$insert_id);
    expect(ids).toEqual([mixpanelInsertId('m'.repeat(37)), mixpanelInsertId('order:88231/1')]);
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{32}$/);
    expect(mixpanelInsertId('order:88231/1')).toBe(ids[1]);
  });

  it('authenticates with a service account and project_id when given one', async () => {
    const destination = lookAlikeDestination(server, {
      credentials: { serviceAccount: 'sa.test', secret: 'sa-secret' },
      appConfig: { projectId: '31337' },
    });
    await forwarder.send(destination, [oneOfEachType().track]);
    expect(server.requests[0]?.query).toEqual({ strict: '1', project_id: '31337' });
    expect(server.requests[0]?.headers.authorization).toBe(
      `Basic ${Buffer.from('sa.test:sa-secret').toString('base64')}`,
    );
    expect(server.accepted).toHaveLength(1);

    const withoutProject = lookAlikeDestination(server, {
      credentials: { serviceAccount: 'sa.test', secret: 'sa-secret' },
    });
    const failure = await forwarder.send(withoutProject, [oneOfEachType().track]).catch((e) => e);
    expect(failure).toMatchObject({
      retryable: false,
      reason: 'mixpanel: invalid_config: a service account needs appConfig.projectId',
    });
  });

  it('keeps each request within 2 MB', async () => {
    const events = bulkyEvents(100, 30_000);
    const outcome = await forwarder.send(lookAlikeDestination(server), events);
    expect(outcome).toMatchObject({ sent: 100, requests: 2 });
    for (const request of server.requests)
      expect(Buffer.byteLength(request.body)).toBeLessThanOrEqual(2 * 1024 * 1024);
  });

  it('400 with failed_records: the others are imported and not resent; the failed ones are permanent', async () => {
    server.rejectItems((record) => record.event === 'Bad', 'value too long');
    const events = [
      sampleEvent({ type: 'track', event: 'Good' }),
      sampleEvent({ type: 'track', event: 'Bad' }),
      sampleEvent({ type: 'track', event: 'Good' }),
    ];
    const failure = await forwarder.send(lookAlikeDestination(server), events).catch((e) => e);
    expect(failure).toMatchObject({ retryable: false, sent: 2, requests: 1, status: 400 });
    expect(failure.undelivered).toEqual([
      { event: events[1], reason: 'properties: value too long', retryable: false },
    ]);
    expect(server.accepted.map((a) => a.item.event)).toEqual(['Good', 'Good']);
  });

  it('an event Mixpanel refuses on time (over 1 h in the future) is reported, the rest imported', async () => {
    const future = new Date(Date.now() + 3 * 3_600_000).toISOString();
    const late = sampleEvent({ type: 'track', event: 'Future', timestamp: future });
    const ok = sampleEvent({ type: 'track', event: 'Now' });
    const failure = await forwarder
      .send(lookAlikeDestination(server), [
        { ...late, receipt: { ...late.receipt, batchSentAt: undefined } },
        ok,
      ])
      .catch((e) => e);
    expect(failure.undelivered).toHaveLength(1);
    expect(failure.undelivered[0].reason).toMatch(/^properties\.time: /);
    expect(failure.sent).toBe(1);
  });
});
