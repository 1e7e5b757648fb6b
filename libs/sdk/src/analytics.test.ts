import { randomUUID } from 'node:crypto';
import { validateEvent, type TrackingEvent } from '@pipeline/events';
import { Analytics, type Context } from './analytics';
import type { SdkConfig } from './config';
import { library } from './library';
import { SESSION_TIMEOUT_MS } from './session';
import { memoryStore, type KeyValueStore } from './storage';
import { RecordingLog, settle } from './testing/fakes';

const t0 = Date.parse('2026-03-01T12:00:00.000Z');

/** One page load: a fresh Analytics over `store`, the browser's view of the page faked. */
function pageLoad(
  options: { store?: KeyValueStore; query?: string; config?: Partial<SdkConfig>; time?: number } = {},
) {
  const store = options.store ?? memoryStore();
  const state = { time: options.time ?? t0, query: options.query ?? '' };
  const events: TrackingEvent[] = [];
  const log = new RecordingLog();
  const context = (): Context => ({
    source: 'web',
    library: { ...library },
    page: { url: `https://shop.example.com/${state.query}`, path: '/', title: 'Home', referrer: '' },
    screen: { width: 1440, height: 900 },
  });
  const analytics = new Analytics({
    config: {
      writeKey: 'wk_1',
      host: 'https://t.example.com',
      batchSize: 20,
      flushIntervalMs: 5000,
      defaultConsent: null,
      ...options.config,
    },
    store,
    storeKind: 'memory',
    sink: {
      enqueue: (event) => events.push(event),
      flush: () => Promise.resolve(),
      state: () => ({ queued: events.length, inFlight: 0, attempts: 0, retryAt: null }),
    },
    environment: { context, query: () => state.query },
    now: () => state.time,
    uuid: randomUUID,
    log,
  });
  const last = () => events[events.length - 1]!;
  return { analytics, events, log, store, state, last };
}

describe('Analytics', () => {
  it('turns every call into an event the server accepts, with the context docs/sdk.md lists', () => {
    const { analytics, events, log } = pageLoad({ query: '?utm_source=news&gclid=g1' });
    analytics.page();
    analytics.track('Order Completed', { total: 10 });
    analytics.identify('user-1', { plan: 'pro' });
    analytics.group('acme', { seats: 3 });
    analytics.alias('user-2');
    expect(log.errors).toEqual([]);
    expect(events.map((e) => e.type)).toEqual(['page', 'track', 'identify', 'group', 'alias']);
    for (const event of events) {
      expect(validateEvent(event).valid).toBe(true);
      expect(event).toMatchObject({
        timestamp: new Date(t0).toISOString(),
        messageId: expect.stringMatching(/^[0-9a-f-]{36}$/),
        sessionId: String(t0),
        context: {
          source: 'web',
          library: { name: 'pipeline-web-tracking', version: library.version },
          session: { id: String(t0) },
          campaign: { utm_source: 'news' },
          clickId: { gclid: 'g1' },
          page: { path: '/' },
          screen: { width: 1440, height: 900 },
        },
      });
    }
    expect(new Set(events.map((e) => e.messageId)).size).toBe(5);
    expect(new Set(events.map((e) => e.anonymousId)).size).toBe(1);
  });

  it('keeps the anonymous id and the user id across page loads', () => {
    const first = pageLoad();
    first.analytics.track('A');
    first.analytics.identify('user-1');
    const second = pageLoad({ store: first.store });
    second.analytics.track('B');
    expect(second.last()).toMatchObject({ anonymousId: first.events[0]!.anonymousId, userId: 'user-1' });
    expect(first.events[0]).not.toHaveProperty('userId');
  });

  it('identify(traits) is for the known user; without one it reports the misuse and sends nothing', () => {
    const { analytics, events, log } = pageLoad();
    analytics.identify({ plan: 'free' });
    expect(events).toHaveLength(0);
    expect(log.errors).toEqual(['identify: userId must be a non-empty string; the event is not sent']);
    analytics.identify(42, { plan: 'pro' });
    analytics.identify({ plan: 'team' });
    expect(events.map((e) => [e.userId, (e as { traits?: unknown }).traits])).toEqual([
      ['42', { plan: 'pro' }],
      ['42', { plan: 'team' }],
    ]);
  });

  it('aliases from the current user id, else the anonymous id', () => {
    const { analytics, events } = pageLoad();
    analytics.alias('user-1');
    analytics.identify('user-1');
    analytics.alias('user-2');
    analytics.alias('user-3', 'legacy-9');
    expect(
      events
        .filter((e) => e.type === 'alias')
        .map((e) => [e.userId, (e as { previousId: string }).previousId]),
    ).toEqual([
      ['user-1', events[0]!.anonymousId],
      ['user-2', 'user-1'],
      ['user-3', 'legacy-9'],
    ]);
  });

  it('reset() forgets the visitor (new anonymous id, no user, new session, no attribution) but not consent', () => {
    const { analytics, events, state } = pageLoad({ query: '?utm_source=ads' });
    analytics.setConsent({ marketing: false });
    analytics.identify('user-1');
    state.query = '';
    state.time += 1000;
    analytics.reset();
    analytics.track('After');
    const [before, after] = [events[0]!, events[1]!];
    expect(after.anonymousId).not.toBe(before.anonymousId);
    expect(after).not.toHaveProperty('userId');
    expect(after.sessionId).toBe(String(t0 + 1000));
    expect(after.context).not.toHaveProperty('campaign');
    expect(analytics.getConsent()).toEqual({ marketing: false });
  });

  it('starts a new session after 30 minutes without events, across page loads', () => {
    const first = pageLoad();
    first.analytics.track('A');
    const second = pageLoad({ store: first.store, time: t0 + SESSION_TIMEOUT_MS - 1 });
    second.analytics.track('B');
    second.state.time += SESSION_TIMEOUT_MS - 1;
    second.analytics.track('C');
    second.state.time += SESSION_TIMEOUT_MS;
    second.analytics.track('D');
    expect([first.last(), ...second.events].map((e) => e.sessionId)).toEqual([
      String(t0),
      String(t0),
      String(t0),
      String(second.state.time),
    ]);
  });

  it('keeps the last campaign and click id across page loads, and takes new ones on page()', () => {
    const landing = pageLoad({ query: '?utm_source=news&utm_campaign=spring&gclid=g1' });
    const next = pageLoad({ store: landing.store });
    next.analytics.track('Browse');
    expect(next.last().context).toMatchObject({
      campaign: { utm_source: 'news', utm_campaign: 'spring' },
      clickId: { gclid: 'g1' },
    });
    next.state.query = '?utm_source=retargeting';
    next.analytics.page();
    expect(next.last().context).toMatchObject({
      campaign: { utm_source: 'retargeting' },
      clickId: { gclid: 'g1' },
    });
    expect(next.last().context?.campaign).not.toHaveProperty('utm_campaign');
  });

  it("takes Segment's argument forms: page(category, name), page(properties), options and callbacks", async () => {
    const { analytics, events } = pageLoad();
    const done = jest.fn();
    analytics.page('Docs', 'Setup', { step: 1 }, {}, done);
    analytics.page({ variant: 'b' });
    analytics.track(
      'Timed',
      {},
      { timestamp: '2026-01-02T03:04:05Z', context: { app: { build: '7' } } },
      done,
    );
    expect(events[0]).toMatchObject({
      name: 'Docs Setup',
      properties: { category: 'Docs', name: 'Setup', step: 1 },
    });
    expect(events[1]).toMatchObject({ properties: { variant: 'b', path: '/' } });
    expect(events[2]).toMatchObject({
      timestamp: '2026-01-02T03:04:05.000Z',
      context: { app: { build: '7' } },
    });
    expect(validateEvent(events[2]).valid).toBe(true);
    await settle();
    expect(done).toHaveBeenCalledTimes(2);
  });

  it('replays the calls queued by the snippet with the time they were made', () => {
    const { analytics, events, log } = pageLoad();
    analytics.replay('page', [], t0 - 1500);
    analytics.replay('track', ['Queued', { n: 1 }], t0 - 1000);
    analytics.replay('reset', [], undefined);
    analytics.replay('setConsent', [{ analytics: false }], t0);
    analytics.replay('loaded', [], t0);
    analytics.track('Live');
    expect(events.map((e) => e.timestamp)).toEqual([
      new Date(t0 - 1500).toISOString(),
      new Date(t0 - 1000).toISOString(),
      new Date(t0).toISOString(),
    ]);
    expect(analytics.getConsent()).toEqual({ analytics: false });
    expect(log.warnings).toEqual(['the snippet queued an unknown call: loaded']);
  });

  it('never throws into the site: a misuse is logged and nothing is queued', () => {
    const { analytics, events, log } = pageLoad();
    const loose = analytics as unknown as Record<string, (...args: unknown[]) => unknown>;
    expect(() => loose.track!()).not.toThrow();
    expect(() => loose.group!(null)).not.toThrow();
    expect(() => loose.track!('X', 'not an object')).not.toThrow();
    expect(events).toHaveLength(0);
    expect(log.errors).toEqual([
      'track: event must be a non-empty string; the event is not sent',
      'group: groupId must be a non-empty string; the event is not sent',
      'track: properties must be an object; the event is not sent',
    ]);
  });

  it('keeps consent across page loads, merged per group, booleans only; the default until one is set', () => {
    const first = pageLoad({ config: { defaultConsent: { marketing: false } } });
    expect(first.analytics.getConsent()).toEqual({ marketing: false });
    expect(first.analytics.setConsent({ analytics: true })).toEqual({ marketing: false, analytics: true });
    first.analytics.setConsent({ marketing: true, ads: 'yes' } as unknown as Record<string, boolean>);
    expect(first.log.errors).toEqual(['setConsent takes booleans only; ignored: ads']);
    const second = pageLoad({ store: first.store, config: { defaultConsent: { marketing: false } } });
    expect(second.analytics.getConsent()).toEqual({ marketing: true, analytics: true });
    expect(second.analytics.consentForSending()).toEqual({ marketing: true, analytics: true });
    const copy = second.analytics.getConsent();
    copy.analytics = false;
    expect(second.analytics.getConsent().analytics).toBe(true);
  });

  it('shows its state in debugState()', () => {
    const { analytics } = pageLoad({ query: '?gclid=g' });
    analytics.identify('u1');
    expect(analytics.debugState()).toEqual({
      version: library.version,
      writeKey: 'wk_1',
      host: 'https://t.example.com',
      anonymousId: expect.any(String),
      userId: 'u1',
      sessionId: String(t0),
      consent: {},
      campaign: null,
      clickId: { gclid: 'g' },
      storage: 'memory',
      settings: { batchSize: 20, flushIntervalMs: 5000 },
      queue: { queued: 1, inFlight: 0, attempts: 0, retryAt: null },
    });
  });

  it('ready() resolves, and runs its callback, only once the queued calls were replayed', async () => {
    const { analytics } = pageLoad();
    const callback = jest.fn();
    let resolved = false;
    void analytics.ready(callback).then(() => {
      resolved = true;
    });
    await settle();
    expect([resolved, callback.mock.calls.length]).toEqual([false, 0]);
    analytics.loaded();
    await settle();
    expect([resolved, callback.mock.calls.length]).toEqual([true, 1]);
  });
});
