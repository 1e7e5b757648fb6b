import type { TrackingEvent } from '@pipeline/events';
import { mixpanelInsertId } from '../../dedupe-keys';
import { mixpanelRecordOf } from './mixpanel-mapping';
import { correctedSampleTime, outboundOf, sampleReceipt, sampleTimestamp } from '../../testing/sample-events';

const base = { messageId: 'm-1', timestamp: sampleTimestamp, anonymousId: 'anon-1', userId: 'u-1' };
const context = {
  page: { url: 'https://shop.example/a', path: '/a', title: 'A', referrer: 'https://ref.example/' },
  browser: 'Firefox',
  os: 'Linux',
  campaign: { utm_source: 's', utm_medium: 'm', utm_campaign: 'c', utm_term: 't', utm_content: 'x' },
};
const reserved = {
  time: correctedSampleTime.getTime(),
  distinct_id: 'u-1',
  $insert_id: 'm-1',
  $device_id: 'anon-1',
  $user_id: 'u-1',
  ip: '198.51.100.7',
  $current_url: 'https://shop.example/a',
  $referrer: 'https://ref.example/',
  $browser: 'Firefox',
  $os: 'Linux',
  $user_agent: sampleReceipt.userAgent,
  utm_source: 's',
  utm_medium: 'm',
  utm_campaign: 'c',
  utm_term: 't',
  utm_content: 'x',
};
const map = (event: TrackingEvent, receipt: Parameters<typeof outboundOf>[1] = {}) =>
  mixpanelRecordOf(outboundOf(event, receipt));

describe('Mixpanel record mapping', () => {
  it('maps a track call, our reserved properties winning over the event’s', () => {
    expect(
      map({ ...base, type: 'track', event: 'E', properties: { a: 1, time: 5, distinct_id: 'x' }, context }),
    ).toStrictEqual({ event: 'E', properties: { a: 1, ...reserved } });
  });

  it('keys an anonymous event by its device, reads Segment’s campaign names, and leaves out what is absent', () => {
    const messageId = 'not/a valid insert id';
    expect(
      map(
        {
          ...base,
          messageId,
          userId: null,
          type: 'track',
          event: 'E',
          context: { campaign: { source: 's2', medium: 'm2', name: 'c2', term: 't2', content: 'x2' } },
        },
        { ip: null, userAgent: null },
      ),
    ).toStrictEqual({
      event: 'E',
      properties: {
        time: correctedSampleTime.getTime(),
        distinct_id: '$device:anon-1',
        $insert_id: mixpanelInsertId(messageId),
        $device_id: 'anon-1',
        utm_source: 's2',
        utm_medium: 'm2',
        utm_campaign: 'c2',
        utm_term: 't2',
        utm_content: 'x2',
      },
    });
    expect(mixpanelInsertId(messageId)).not.toBe(messageId);
  });

  it('maps page calls to Mixpanel’s page view with the page’s title, path and name', () => {
    expect(
      map({ ...base, type: 'page', name: 'Home', properties: { v: 'b', title: 'Own' }, context }),
    ).toStrictEqual({
      event: '$mp_web_page_view',
      properties: {
        v: 'b',
        title: 'Own',
        current_page_title: 'Own',
        current_url_path: '/a',
        page_name: 'Home',
        ...reserved,
      },
    });
    expect(map({ ...base, type: 'page' }, { ip: null, userAgent: null })).toStrictEqual({
      event: '$mp_web_page_view',
      properties: {
        time: correctedSampleTime.getTime(),
        distinct_id: 'u-1',
        $insert_id: 'm-1',
        $device_id: 'anon-1',
        $user_id: 'u-1',
      },
    });
  });

  it('maps screen and identify calls; group and alias have reasons', () => {
    expect(map({ ...base, type: 'screen', name: 'Cart', properties: { step: 2 }, context })).toStrictEqual({
      event: 'Screen Viewed',
      properties: { name: 'Cart', step: 2, ...reserved },
    });
    expect(map({ ...base, type: 'identify', traits: { plan: 'pro' }, context })).toStrictEqual({
      event: '$identify',
      properties: { ...reserved, $identified_id: 'u-1', $anon_id: 'anon-1' },
    });
    expect(map({ ...base, type: 'group', groupId: 'g' })).toBe(
      'group_not_supported: group profiles are Mixpanel’s Groups API, not the import API',
    );
    expect(map({ ...base, type: 'alias', previousId: 'p' })).toBe(
      'alias_not_supported: simplified ID merge links ids on identify and ignores $create_alias',
    );
  });
});
