import type { TrackingEvent } from '@pipeline/events';
import { customerIoOperationOf } from './customer-io-mapping';
import { ulidOf } from '../../dedupe-keys';
import { outboundOf } from '../../testing/sample-events';

// 11:59:54.750 once corrected: whole seconds are rounded down.
const timestamp = '2026-03-01T11:59:59.750Z';
const ms = Date.parse('2026-03-01T11:59:54.750Z');
const seconds = Math.floor(ms / 1000);
const base = { messageId: 'm-1', timestamp, anonymousId: 'anon-1', userId: 'u-1' };
const person = { type: 'person', identifiers: { id: 'u-1' } };
const map = (event: TrackingEvent, objectTypeId = '1') =>
  customerIoOperationOf(outboundOf(event), objectTypeId);
const createdAtOf = (traits: Record<string, unknown>) => {
  const operation = map({ ...base, type: 'identify', traits });
  return typeof operation === 'string' ? operation : operation.attributes;
};

describe('Customer.io operation mapping', () => {
  it('maps a track call to an event with a ULID of its time and id', () => {
    expect(seconds).toBe(1_772_366_394);
    expect(map({ ...base, type: 'track', event: 'E', properties: { a: 1 } })).toStrictEqual({
      ...person,
      action: 'event',
      id: ulidOf('m-1', ms),
      name: 'E',
      timestamp: seconds,
      attributes: { a: 1 },
    });
    expect(map({ ...base, type: 'track', event: 'E' })).toStrictEqual({
      ...person,
      action: 'event',
      id: ulidOf('m-1', ms),
      name: 'E',
      timestamp: seconds,
      attributes: {},
    });
  });

  it('names a page view by its URL, else its path, else its name', () => {
    const page = { url: 'https://shop.example/a', path: '/a' };
    expect(
      map({ ...base, type: 'page', name: 'Home', properties: { v: 'b' }, context: { page } }),
    ).toStrictEqual({
      ...person,
      action: 'page',
      id: ulidOf('m-1', ms),
      name: 'https://shop.example/a',
      timestamp: seconds,
      attributes: { name: 'Home', url: 'https://shop.example/a', path: '/a', v: 'b' },
    });
    expect(map({ ...base, type: 'page', name: 'Home', context: { page: { path: '/a' } } })).toStrictEqual({
      ...person,
      action: 'page',
      id: ulidOf('m-1', ms),
      name: '/a',
      timestamp: seconds,
      attributes: { name: 'Home', path: '/a' },
    });
    expect(map({ ...base, type: 'page', name: 'Home' })).toStrictEqual({
      ...person,
      action: 'page',
      id: ulidOf('m-1', ms),
      name: 'Home',
      timestamp: seconds,
      attributes: { name: 'Home' },
    });
    expect(map({ ...base, type: 'page' })).toBe('page_without_url: Customer.io names a page view by its URL');
  });

  it('names a screen view by its name; without one it has a reason', () => {
    expect(map({ ...base, type: 'screen', name: 'Cart', properties: { step: 2 } })).toStrictEqual({
      ...person,
      action: 'screen',
      id: ulidOf('m-1', ms),
      name: 'Cart',
      timestamp: seconds,
      attributes: { step: 2 },
    });
    expect(map({ ...base, type: 'screen', name: 'Cart' })).toStrictEqual({
      ...person,
      action: 'screen',
      id: ulidOf('m-1', ms),
      name: 'Cart',
      timestamp: seconds,
      attributes: {},
    });
    for (const event of [
      { ...base, type: 'screen', name: '' },
      { ...base, type: 'screen' },
    ] as TrackingEvent[])
      expect(map(event)).toBe('screen_without_name: Customer.io names a screen view by its name');
  });

  it('maps identify to the person’s attributes and group to an object related to them', () => {
    expect(map({ ...base, type: 'identify', traits: { plan: 'pro' } })).toStrictEqual({
      ...person,
      action: 'identify',
      timestamp: seconds,
      attributes: { plan: 'pro' },
    });
    expect(map({ ...base, type: 'identify' })).toStrictEqual({
      ...person,
      action: 'identify',
      timestamp: seconds,
      attributes: {},
    });
    expect(map({ ...base, type: 'group', groupId: 'acme', traits: { seats: 5 } }, '7')).toStrictEqual({
      type: 'object',
      identifiers: { object_type_id: '7', object_id: 'acme' },
      action: 'identify',
      attributes: { seats: 5 },
      cio_relationships: [{ identifiers: { id: 'u-1' } }],
    });
    expect(map({ ...base, type: 'group', groupId: 'acme' })).toStrictEqual({
      type: 'object',
      identifiers: { object_type_id: '1', object_id: 'acme' },
      action: 'identify',
      attributes: {},
      cio_relationships: [{ identifiers: { id: 'u-1' } }],
    });
  });

  it('has reasons for alias and anonymous events', () => {
    expect(map({ ...base, type: 'alias', previousId: 'p' })).toBe(
      'alias_not_supported: Customer.io merges by deleting the secondary person, which cannot be undone',
    );
    expect(map({ ...base, userId: null, type: 'track', event: 'E' })).toBe(
      'anonymous: Track v2 operations need a person identifier; anonymous events are v1 calls, one per event',
    );
  });

  it('sends created_at in unix seconds, from an ISO time or a number of seconds or milliseconds', () => {
    expect(createdAtOf({ createdAt: '2026-01-02T03:04:05.900Z', plan: 'pro' })).toStrictEqual({
      plan: 'pro',
      created_at: 1_767_323_045,
    });
    expect(createdAtOf({ created_at: 1_767_323_045_900 })).toStrictEqual({ created_at: 1_767_323_045 });
    expect(createdAtOf({ created_at: 1_767_323_045 })).toStrictEqual({ created_at: 1_767_323_045 });
    // 10^12 ms is 2001; as seconds it is year 33658, which Customer.io is told as it is.
    expect(createdAtOf({ created_at: 1e12 })).toStrictEqual({ created_at: 1e12 });
    expect(createdAtOf({ createdAt: 1_000, created_at: 2_000 })).toStrictEqual({ created_at: 1_000 });
    expect(createdAtOf({ createdAt: 'yesterday', a: 1 })).toStrictEqual({ a: 1 });
    expect(createdAtOf({ created_at: true })).toStrictEqual({});
    // Date.parse would read a one-element array as its text: only text is read as a time.
    expect(createdAtOf({ createdAt: ['2026-01-02T03:04:05Z'] })).toStrictEqual({});
  });
});
