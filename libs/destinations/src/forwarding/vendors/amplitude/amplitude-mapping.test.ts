import type { TrackingEvent } from '@pipeline/events';
import { amplitudeEventOf } from './amplitude-mapping';
import { correctedSampleTime, outboundOf, sampleTimestamp } from '../../testing/sample-events';

const base = { messageId: 'm-1', timestamp: sampleTimestamp, anonymousId: 'anon-1', userId: 'u-1' };
const context = {
  page: { url: 'https://shop.example/a', path: '/a', title: 'A', referrer: 'https://ref.example/' },
  os: 'macOS',
  device: 'MacBook',
  language: 'en-US',
  locale: 'de-DE',
};
const common = {
  user_id: 'u-1',
  device_id: 'anon-1',
  time: correctedSampleTime.getTime(),
  insert_id: 'm-1',
  ip: '198.51.100.7',
  platform: 'Web',
  os_name: 'macOS',
  device_model: 'MacBook',
  language: 'en-US',
};
const map = (event: TrackingEvent, groupType = 'company') => amplitudeEventOf(outboundOf(event), groupType);

describe('Amplitude event mapping', () => {
  it('maps a track call, with a numeric revenue as revenue', () => {
    expect(
      map({ ...base, type: 'track', event: 'Order Completed', properties: { revenue: 12.5, a: 1 }, context }),
    ).toStrictEqual({
      ...common,
      event_type: 'Order Completed',
      event_properties: { revenue: 12.5, a: 1 },
      revenue: 12.5,
    });
    expect(
      map({ ...base, type: 'track', event: 'E', properties: { revenue: '12.5' }, context }),
    ).toStrictEqual({
      ...common,
      event_type: 'E',
      event_properties: { revenue: '12.5' },
    });
    expect(map({ ...base, type: 'track', event: 'E', context })).toStrictEqual({
      ...common,
      event_type: 'E',
      event_properties: {},
    });
  });

  it('maps page, screen, identify and group calls; alias has a reason', () => {
    expect(
      map({ ...base, type: 'page', name: 'Home', properties: { title: 'Own', v: 'b' }, context }),
    ).toStrictEqual({
      ...common,
      event_type: 'Page Viewed',
      event_properties: {
        name: 'Home',
        url: 'https://shop.example/a',
        path: '/a',
        title: 'Own',
        referrer: 'https://ref.example/',
        v: 'b',
      },
    });
    const { os_name: _os, device_model: _device, language: _language, ...withoutContext } = common;
    expect(map({ ...base, type: 'page', context: {} })).toStrictEqual({
      ...withoutContext,
      event_type: 'Page Viewed',
      event_properties: {},
    });
    expect(map({ ...base, type: 'screen', name: 'Cart', properties: { step: 2 }, context })).toStrictEqual({
      ...common,
      event_type: 'Screen Viewed',
      event_properties: { name: 'Cart', step: 2 },
    });
    expect(map({ ...base, type: 'identify', traits: { plan: 'pro' }, context })).toStrictEqual({
      ...common,
      event_type: '$identify',
      user_properties: { $set: { plan: 'pro' } },
    });
    expect(map({ ...base, type: 'identify', context })).toStrictEqual({
      ...common,
      event_type: '$identify',
      user_properties: { $set: {} },
    });
    expect(
      map({ ...base, type: 'group', groupId: 'acme', traits: { seats: 5 }, context }, 'team'),
    ).toStrictEqual({
      ...common,
      event_type: '$identify',
      groups: { team: 'acme' },
      user_properties: { $set: { team: 'acme' } },
    });
    expect(map({ ...base, type: 'alias', previousId: 'anon-1', context })).toBe(
      'alias_not_supported: Amplitude links user ids through its User Mapping API, not HTTP V2',
    );
  });

  it('leaves out what the event does not have: no user, no ip, the locale for a missing language', () => {
    const event: TrackingEvent = {
      messageId: 'm-2',
      timestamp: sampleTimestamp,
      anonymousId: 'anon-2',
      userId: null,
      type: 'track',
      event: 'E',
      context: { locale: 'de-DE' },
    };
    const mapped = amplitudeEventOf(outboundOf(event, { ip: null }), 'company');
    expect(mapped).toStrictEqual({
      device_id: 'anon-2',
      time: correctedSampleTime.getTime(),
      insert_id: 'm-2',
      platform: 'Web',
      language: 'de-DE',
      event_type: 'E',
      event_properties: {},
    });
  });

  it('takes a session id of 10 to 16 digits, the event’s before the context’s, as a number', () => {
    const sessionOf = (sessionId: string | undefined, contextId?: string) => {
      const mapped = map({
        ...base,
        type: 'track',
        event: 'E',
        ...(sessionId === undefined ? {} : { sessionId }),
        context: contextId === undefined ? {} : { session: { id: contextId } },
      });
      return typeof mapped === 'string' ? mapped : mapped.session_id;
    };
    expect(sessionOf('1700000000123')).toBe(1_700_000_000_123);
    expect(sessionOf('1700000000')).toBe(1_700_000_000);
    expect(sessionOf('1234567890123456')).toBe(1_234_567_890_123_456);
    expect(sessionOf('1700000000123', '1600000000000')).toBe(1_700_000_000_123);
    expect(sessionOf(undefined, '1600000000000')).toBe(1_600_000_000_000);
    for (const id of ['170000000', '12345678901234567', 'x1700000000', '1700000000x', 'session-1'])
      expect(sessionOf(id)).toBe(undefined);
    expect(sessionOf(undefined)).toBe(undefined);
  });
});
