import type { TrackingEvent } from '@pipeline/events';
import type { Consent } from './consent';
import { Delivery, KEEPALIVE_BYTES, takeBatch, type DeliverySettings } from './delivery';
import { EventQueue } from './event-queue';
import { memoryStore, type EnumerableStore } from './storage';
import { FakeClock, FakeTransport, RecordingLog } from './testing/fakes';

let counter = 0;
const event = (extra: Record<string, unknown> = {}): TrackingEvent => ({
  type: 'track',
  event: 'Clicked',
  messageId: `m${(counter += 1)}`,
  timestamp: '2026-03-01T11:59:00.000Z',
  anonymousId: 'anon',
  ...extra,
});

function setUp(settings: Partial<DeliverySettings> = {}, store: EnumerableStore = memoryStore()) {
  const clock = new FakeClock();
  const transport = new FakeTransport(clock);
  const log = new RecordingLog();
  const queue = new EventQueue(store, `tab${(counter += 1)}`, log);
  let consent: Consent | null = null;
  const delivery = new Delivery(
    queue,
    {
      url: 'https://t.example.com/collect',
      writeKey: 'wk_1',
      batchSize: 3,
      flushIntervalMs: 5000,
      ...settings,
    },
    transport,
    clock,
    () => consent,
    log,
  );
  return {
    clock,
    transport,
    log,
    queue,
    delivery,
    store,
    setConsent: (c: Consent) => {
      consent = c;
    },
  };
}

describe('Delivery', () => {
  it('sends a batch as soon as batchSize events wait, with the key in the header and the body', async () => {
    const { clock, transport, delivery, queue } = setUp();
    const events = [event(), event(), event()];
    events.forEach((e) => delivery.enqueue(e));
    await clock.advance(0);
    expect(transport.posts).toHaveLength(1);
    expect(transport.posts[0]).toEqual({
      url: 'https://t.example.com/collect',
      writeKey: 'wk_1',
      keepalive: true,
      at: clock.time,
      body: { writeKey: 'wk_1', sentAt: new Date(clock.time).toISOString(), batch: events },
    });
    expect(queue.length).toBe(0);
  });

  it('sends fewer events flushInterval after the first one, with sentAt the time of sending', async () => {
    const { clock, transport, delivery } = setUp();
    delivery.enqueue(event());
    await clock.advance(3000);
    delivery.enqueue(event());
    await clock.advance(1999);
    expect(transport.posts).toHaveLength(0);
    await clock.advance(1);
    expect(transport.postedIds()).toEqual([[`m${counter - 1}`, `m${counter}`]]);
    expect(transport.posts[0]?.body.sentAt).toBe(new Date(clock.time).toISOString());
  });

  it('keeps the order: one request at a time, the next batch after the answer', async () => {
    const { clock, transport, delivery } = setUp();
    const events = Array.from({ length: 7 }, () => event());
    events.forEach((e) => delivery.enqueue(e));
    await delivery.flush();
    await clock.advance(0);
    expect(transport.postedIds()).toEqual([
      events.slice(0, 3).map((e) => e.messageId),
      events.slice(3, 6).map((e) => e.messageId),
      events.slice(6).map((e) => e.messageId),
    ]);
  });

  it('stamps the consent in force when the batch is sent, not when the event was queued', async () => {
    const { clock, transport, delivery, setConsent } = setUp();
    setConsent({ analytics: true, marketing: true });
    delivery.enqueue(event());
    setConsent({ analytics: true, marketing: false });
    await clock.advance(5000);
    expect(transport.posts[0]?.body.batch[0]?.context).toEqual({
      consent: { analytics: true, marketing: false },
    });
  });

  it('retries a network failure with exponential backoff and jitter, resending the same events', async () => {
    const { clock, transport, delivery, queue } = setUp();
    transport.answers = [null, null, null];
    clock.randomValue = 0; // the shortest delays: 500 ms, 1 s, 2 s
    [event(), event(), event()].forEach((e) => delivery.enqueue(e));
    await clock.advance(0);
    const start = clock.time;
    await clock.advance(10_000);
    expect(transport.posts.map((p) => p.at - start)).toEqual([0, 500, 1500, 3500]);
    const ids = transport.postedIds();
    expect(new Set(ids.map((batch) => batch.join())).size).toBe(1);
    expect(new Set(transport.posts.map((p) => p.body.sentAt)).size).toBe(4);
    expect([queue.length, queue.attempts, queue.retryAt]).toEqual([0, 0, 0]);
  });

  it("honours 429 and 503 Retry-After: the header's seconds, or the body's retryAfter", async () => {
    const { clock, transport, delivery } = setUp();
    transport.answers = [
      { status: 429, body: { ok: false, error: 'rate_limit_exceeded' }, retryAfter: '3' },
      {
        status: 503,
        body: { ok: false, error: 'durable_ingress_unavailable', retryAfter: 5 },
        retryAfter: null,
      },
    ];
    clock.randomValue = 0;
    [event(), event(), event()].forEach((e) => delivery.enqueue(e));
    await clock.advance(0);
    const start = clock.time;
    await clock.advance(2999);
    expect(transport.posts).toHaveLength(1);
    await clock.advance(1);
    expect(transport.posts).toHaveLength(2);
    await clock.advance(4999);
    expect(transport.posts).toHaveLength(2);
    await clock.advance(1);
    expect(transport.posts.map((p) => p.at - start)).toEqual([0, 3000, 8000]);
  });

  it('holds every send, flush() included, until the retry is due', async () => {
    const { clock, transport, delivery, queue } = setUp();
    transport.answers = [{ status: 503, body: { retryAfter: 10 }, retryAfter: '10' }];
    delivery.enqueue(event());
    await delivery.flush();
    expect(delivery.state()).toMatchObject({ queued: 1, attempts: 1, retryAt: expect.any(String) });
    delivery.enqueue(event());
    delivery.enqueue(event());
    await delivery.flush();
    await clock.advance(9000);
    expect(transport.posts).toHaveLength(1);
    await clock.advance(2000); // 10 s and a random part of up to 2 s
    expect(transport.posts).toHaveLength(2);
    expect(queue.length).toBe(0);
  });

  it('drops a batch the host refuses with another 4xx, with console.error, and goes on', async () => {
    const { clock, transport, delivery, log, queue } = setUp();
    transport.answers = [{ status: 401, body: { ok: false, error: 'invalid_write_key' }, retryAfter: null }];
    [event(), event(), event()].forEach((e) => delivery.enqueue(e));
    await clock.advance(0);
    expect(log.errors).toEqual([
      'the tracking host refused 3 events (401 invalid_write_key); they are dropped',
    ]);
    expect(queue.length).toBe(0);
    delivery.enqueue(event());
    await delivery.flush();
    expect(transport.posts).toHaveLength(2);
  });

  it('reports the events a partial success refused as invalid, and does not send them again', async () => {
    const { clock, transport, delivery, log, queue } = setUp();
    const errors = [{ index: 1, errors: [{ message: 'event must have at most 200 characters' }] }];
    transport.answers = [
      { status: 202, body: { ok: true, received: 3, invalid: 1, errors }, retryAfter: null },
    ];
    [event(), event(), event()].forEach((e) => delivery.enqueue(e));
    await clock.advance(0);
    expect(log.errors).toEqual(['the tracking host refused 1 of 3 events as invalid']);
    expect(queue.length).toBe(0);
    await clock.advance(60_000);
    expect(transport.posts).toHaveLength(1);
  });

  it('keeps requests under the byte bound and sends large ones without keepalive', () => {
    const big = Array.from({ length: 5 }, () => event({ properties: { blob: 'x'.repeat(20_000) } }));
    expect(takeBatch(big, 100, 50_000)).toHaveLength(2);
    expect(takeBatch(big, 100, 10)).toHaveLength(1); // at least one, whatever its size
    expect(takeBatch(big, 3, 10_000_000)).toHaveLength(3);
  });

  it('on hide, hands what is left to sendBeacon in requests under 64 KiB, leaving the in-flight batch alone', async () => {
    const { clock, transport, delivery, queue } = setUp({ batchSize: 100 });
    let answer: (value: null) => void = () => undefined;
    transport.post = (url, body, writeKey, keepalive) => {
      transport.posts.push({ url, body: JSON.parse(body), writeKey, keepalive, at: clock.now() });
      return new Promise((resolve) => (answer = resolve));
    };
    const first = event();
    delivery.enqueue(first);
    void delivery.flush(); // in flight, unanswered
    const rest = Array.from({ length: 6 }, () => event({ properties: { blob: 'y'.repeat(20_000) } }));
    rest.forEach((e) => delivery.enqueue(e));
    delivery.hide();
    expect(transport.beacons.map((b) => b.body.batch.length)).toEqual([3, 3]);
    expect(transport.beacons.every((b) => b.bytes <= KEEPALIVE_BYTES && b.body.writeKey === 'wk_1')).toBe(
      true,
    );
    expect(transport.beacons.flatMap((b) => b.body.batch.map((e) => e.messageId))).toEqual(
      rest.map((e) => e.messageId),
    );
    expect(queue.events.map((e) => e.messageId)).toEqual([first.messageId]);
    answer(null);
  });

  it('on hide, keeps what the browser refuses, and sends nothing while the host asked to wait', async () => {
    const { clock, transport, delivery, queue } = setUp();
    transport.beaconAccepts = false;
    delivery.enqueue(event());
    delivery.hide();
    expect(queue.length).toBe(1);

    transport.beaconAccepts = true;
    transport.answers = [{ status: 429, body: { retryAfter: 30 }, retryAfter: '30' }];
    await delivery.flush();
    delivery.hide();
    expect([transport.beacons.length, queue.length]).toEqual([0, 1]);
    await clock.advance(36_000); // 30 s and a random part of up to 6 s
    expect(queue.length).toBe(0);
  });

  it('survives a reload: the next page adopts the stored queue and sends it once the wait is over', async () => {
    const store = memoryStore();
    const before = setUp({}, store);
    before.transport.answers = [{ status: 503, body: { retryAfter: 2 }, retryAfter: '2' }];
    before.queue.heartbeat(before.clock.time);
    const pending = [event(), event()];
    pending.forEach((e) => before.delivery.enqueue(e));
    await before.delivery.flush();
    before.delivery.hide();
    before.queue.release();

    const after = setUp({}, store);
    after.clock.time = before.clock.time + 500;
    after.queue.heartbeat(after.clock.time);
    after.delivery.resume();
    await after.clock.advance(1000);
    expect(after.transport.posts).toHaveLength(0);
    await after.clock.advance(1000);
    expect(after.transport.postedIds()).toEqual([pending.map((e) => e.messageId)]);
  });

  it('keeps events but sends nothing without a write key or host', async () => {
    const { clock, transport, delivery, queue } = setUp({ writeKey: null });
    [event(), event(), event()].forEach((e) => delivery.enqueue(e));
    await clock.advance(60_000);
    delivery.hide();
    expect([transport.posts.length, transport.beacons.length, queue.length]).toEqual([0, 0, 3]);
  });
});
