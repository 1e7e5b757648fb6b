import type { TrackingEvent } from '@pipeline/events';
import { EventQueue, MAX_QUEUED_EVENTS, QUEUE_STALE_MS } from './event-queue';
import { memoryStore, storageKeys } from './storage';
import { RecordingLog } from './testing/fakes';

const event = (messageId: string): TrackingEvent => ({
  type: 'track',
  event: 'Clicked',
  messageId,
  timestamp: '2026-03-01T12:00:00.000Z',
  anonymousId: 'a',
});
const ids = (queue: EventQueue) => queue.events.map((e) => e.messageId);
const t0 = Date.parse('2026-03-01T12:00:00Z');

describe('EventQueue', () => {
  it('keeps its events in its own storage entry, and removes the entry once empty', () => {
    const store = memoryStore();
    const queue = new EventQueue(store, 'tab1', new RecordingLog());
    queue.push(event('m1'));
    queue.push(event('m2'));
    queue.setRetry(t0 + 5000, 2);
    expect(JSON.parse(store.getItem(`${storageKeys.queuePrefix}tab1`) ?? '')).toEqual({
      events: [event('m1'), event('m2')],
      retryAt: t0 + 5000,
      attempts: 2,
    });
    queue.remove(new Set(['m1', 'm2']));
    expect(store.getItem(`${storageKeys.queuePrefix}tab1`)).toBeNull();
  });

  it('is adopted by the next page load after a release, with its retry state', () => {
    const store = memoryStore();
    const first = new EventQueue(store, 'page1', new RecordingLog());
    first.heartbeat(t0);
    first.push(event('m1'));
    first.setRetry(t0 + 3000, 1);
    first.release();

    const second = new EventQueue(store, 'page2', new RecordingLog());
    second.push(event('m2'));
    expect(second.heartbeat(t0 + 100)).toBe(1);
    expect(ids(second)).toEqual(['m1', 'm2']);
    expect([second.retryAt, second.attempts]).toEqual([t0 + 3000, 1]);
    expect(store.getItem(`${storageKeys.queuePrefix}page1`)).toBeNull();
    expect(store.getItem(`${storageKeys.queuePrefix}page1.alive`)).toBeNull();
  });

  it("leaves a live tab's queue alone, and adopts it once the tab has been silent too long (a crash)", () => {
    const store = memoryStore();
    const other = new EventQueue(store, 'other', new RecordingLog());
    other.heartbeat(t0);
    other.push(event('m1'));

    const mine = new EventQueue(store, 'mine', new RecordingLog());
    expect(mine.heartbeat(t0 + QUEUE_STALE_MS - 1)).toBe(0);
    expect(ids(mine)).toEqual([]);
    mine.heartbeat(t0 + QUEUE_STALE_MS);
    expect(ids(mine)).toEqual(['m1']);
  });

  it('gives the events back to storage after a back/forward cache restore when no other page took them', () => {
    const store = memoryStore();
    const page = new EventQueue(store, 'page', new RecordingLog());
    page.push(event('m1'));
    page.release();
    page.reclaim(t0);
    expect(ids(page)).toEqual(['m1']);

    page.release();
    const next = new EventQueue(store, 'next', new RecordingLog());
    next.heartbeat(t0 + 1);
    page.reclaim(t0 + 2);
    expect(ids(page)).toEqual([]);
    expect(ids(next)).toEqual(['m1']);
  });

  it('drops the oldest events past its bound, warning once', () => {
    const log = new RecordingLog();
    const queue = new EventQueue(memoryStore(), 'tab', log);
    for (let i = 0; i < MAX_QUEUED_EVENTS + 3; i += 1) queue.push(event(`m${i}`));
    expect(queue.length).toBe(MAX_QUEUED_EVENTS);
    expect(ids(queue)[0]).toBe('m3');
    expect(log.warnings).toHaveLength(1);
  });

  it('ignores a corrupted entry, and lives in memory when storage refuses writes', () => {
    const store = memoryStore();
    store.setItem(`${storageKeys.queuePrefix}broken`, '{"events": "nope"');
    const log = new RecordingLog();
    const queue = new EventQueue(store, 'tab', log);
    queue.heartbeat(t0);
    expect(queue.length).toBe(0);
    expect(store.getItem(`${storageKeys.queuePrefix}broken`)).toBeNull();

    const full = {
      ...memoryStore(),
      length: 0,
      key: () => null,
      getItem: () => null,
      removeItem: () => undefined,
    };
    const refusing = new EventQueue(
      {
        ...full,
        setItem: () => {
          throw new Error('QuotaExceededError');
        },
      },
      'tab',
      log,
    );
    refusing.push(event('m1'));
    refusing.push(event('m2'));
    expect(ids(refusing)).toEqual(['m1', 'm2']);
    expect(log.warnings.filter((w) => w.includes('could not be saved'))).toHaveLength(1);
  });
});
