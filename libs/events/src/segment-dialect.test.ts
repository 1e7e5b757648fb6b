import { readFileSync } from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { integrationAllows, segmentDestinationNames } from './destination-selection';
import { normalizeEvent } from './event-normalizer';
import { validateEvent } from './event-validator';
import { outboxKey } from './outbox-envelope';

const base = { messageId: 'm-1', timestamp: '2026-03-01T10:00:00.000Z' };
const receipt = { receivedAt: new Date('2026-03-01T10:00:05.000Z'), ip: null, userAgent: null };

describe("Segment's dialect of the event contract", () => {
  it.each([
    { type: 'track', event: 'E' },
    { type: 'page', name: 'Home' },
    { type: 'screen', name: 'Checkout' },
    { type: 'group', groupId: 'acme' },
  ])('takes a %o with a userId alone, and refuses it with nobody', (fields) => {
    expect(validateEvent({ ...base, ...fields, userId: 'u-1' }, Infinity, 'segment')).toMatchObject({
      valid: true,
    });
    expect(validateEvent({ ...base, ...fields }, Infinity, 'segment')).toEqual({
      valid: false,
      errors: [{ message: 'userId or anonymousId is required' }],
    });
    // A null userId is nobody too.
    expect(validateEvent({ ...base, ...fields, userId: null }, Infinity, 'segment')).toEqual({
      valid: false,
      errors: [{ message: 'userId or anonymousId is required' }],
    });
  });

  it('names who is missing once, beside the other errors, in each dialect’s words', () => {
    const nobody = { ...base, type: 'track' };
    expect(validateEvent(nobody, Infinity, 'segment')).toEqual({
      valid: false,
      errors: [{ message: 'userId or anonymousId is required' }, { message: 'event is required' }],
    });
    expect(validateEvent(nobody)).toEqual({
      valid: false,
      errors: [{ message: 'anonymousId is required' }, { message: 'event is required' }],
    });
  });

  it('/collect keeps requiring an anonymousId and refuses screen', () => {
    expect(validateEvent({ ...base, type: 'track', event: 'E', userId: 'u-1' })).toEqual({
      valid: false,
      errors: [{ message: 'anonymousId is required' }],
    });
    expect(validateEvent({ ...base, type: 'screen', anonymousId: 'a' })).toEqual({
      valid: false,
      errors: [{ message: 'type must be one of track, identify, page, group, alias' }],
    });
    expect(validateEvent({ ...base, type: 'screen', anonymousId: 'a' }, Infinity, 'segment')).toMatchObject({
      valid: true,
    });
  });

  it('takes integrations as booleans or option objects, nothing else', () => {
    const track = { ...base, type: 'track', event: 'E', anonymousId: 'a' };
    expect(
      validateEvent({ ...track, integrations: { All: false, Amplitude: { session_id: 1 } } }).valid,
    ).toBe(true);
    expect(validateEvent({ ...track, integrations: { Amplitude: 'yes' } })).toMatchObject({ valid: false });
    expect(validateEvent({ ...track, integrations: ['Amplitude'] })).toMatchObject({ valid: false });
  });

  it('stores a screen in events and a userId-only event without an anonymous id', () => {
    const screen = validateEvent(
      { ...base, type: 'screen', userId: 'u-1', name: 'Cart', properties: { n: 1 } },
      Infinity,
      'segment',
    );
    if (!screen.valid) throw new Error('invalid');
    const { table, row } = normalizeEvent(screen.event, receipt);
    expect(table).toBe('events');
    expect(row).toMatchObject({
      type: 'screen',
      name: 'Cart',
      event: null,
      properties: { n: 1 },
      anonymous_id: null,
      user_id: 'u-1',
    });
  });

  it('keys a userId-only batch by its user', () => {
    const envelope = {
      v: 2 as const,
      accountId: 'acc',
      writeKeyId: 'w',
      batchId: 'b',
      receivedAt: '',
      ip: null,
      userAgent: null,
    };
    expect(outboxKey({ ...envelope, events: [{ ...base, type: 'track', event: 'E', userId: 'u-7' }] })).toBe(
      'acc:u-7',
    );
    expect(
      outboxKey({
        ...envelope,
        events: [{ ...base, type: 'track', event: 'E', anonymousId: 'a', userId: 'u-7' }],
      }),
    ).toBe('acc:a');
  });
});

describe('integrationAllows (Segment’s integrations object)', () => {
  it('reads the destination’s own entry first, then All, by Segment’s names or ours, without case', () => {
    expect(integrationAllows('amplitude', undefined)).toBe(true);
    expect(integrationAllows('amplitude', {})).toBe(true);
    expect(integrationAllows('amplitude', { All: false })).toBe(false);
    expect(integrationAllows('amplitude', { All: false, Amplitude: true })).toBe(true);
    expect(integrationAllows('amplitude', { All: false, amplitude: { session_id: 3 } })).toBe(true);
    expect(integrationAllows('amplitude', { Amplitude: false })).toBe(false);
    expect(integrationAllows('mixpanel', { Amplitude: false })).toBe(true);
    expect(integrationAllows('customer_io', { all: false, 'customer.io': true })).toBe(true);
    expect(integrationAllows('webhook', { Webhooks: false })).toBe(false);
    expect(integrationAllows('braze', { Appboy: false, All: true })).toBe(false);
    expect(integrationAllows('amplitude', 'All')).toBe(true);
    expect(integrationAllows('amplitude', null)).toBe(true);
  });

  it.each([
    ['amplitude', ['Amplitude', 'Actions Amplitude', 'Amplitude (Actions)', 'amplitude']],
    ['mixpanel', ['Mixpanel', 'Actions Mixpanel', 'Mixpanel (Actions)', 'mixpanel']],
    ['braze', ['Braze', 'Appboy', 'Braze Cloud Mode (Actions)', 'braze']],
    ['customer_io', ['Customer.io', 'Customerio', 'Customer.io (Actions)', 'customer_io']],
    ['segment', ['Segment', 'Segment.io', 'segment']],
    ['onesignal', ['OneSignal', 'OneSignal (Actions)', 'onesignal']],
    ['webhook', ['Webhooks', 'Webhook', 'Webhooks (Actions)', 'webhook']],
    ['hubspot', ['HubSpot', 'Hubspot', 'HubSpot Cloud Mode (Actions)', 'hubspot']],
    [
      'meta_conversions',
      [
        'Facebook Conversions API',
        'Facebook Conversions API (Actions)',
        'Meta Conversions API',
        'meta_conversions',
      ],
    ],
    ['google_ads', ['Google Ads Conversions', 'Google AdWords New', 'Google Ads (Gtag)', 'google_ads']],
  ])('%s answers to each documented name (docs/coming-from-segment.md)', (appType, names) => {
    for (const name of names) {
      expect([name, integrationAllows(appType, { All: false, [name]: true })]).toEqual([name, true]);
      expect([name, integrationAllows(appType, { All: true, [name.toUpperCase()]: false })]).toEqual([
        name,
        false,
      ]);
    }
    expect(integrationAllows(appType, { All: true })).toBe(true);
    expect(integrationAllows(appType, { All: false, Other: true })).toBe(false);
  });

  it('has the names docs/coming-from-segment.md lists, for each app type, in its order', () => {
    const doc = readFileSync(path.resolve(__dirname, '../../../docs/coming-from-segment.md'), 'utf8');
    const rows = [...doc.matchAll(/^\| `([a-z_]+)` *\| (`.+`) *\|$/gm)].map(
      ([, appType, names]) => [appType, [...names!.matchAll(/`([^`]+)`/g)].map((m) => m[1])] as const,
    );
    expect(Object.fromEntries(rows)).toEqual(segmentDestinationNames);
  });

  it('a destination of another app type never decides, whatever the object holds (fast-check)', () => {
    const appTypes = Object.keys(segmentDestinationNames);
    fc.assert(
      fc.property(
        fc.constantFrom(...appTypes),
        fc.dictionary(fc.string(), fc.oneof(fc.boolean(), fc.constant({}))),
        (appType, integrations) => {
          const own = Object.entries(integrations).filter(([key]) =>
            [appType, ...segmentDestinationNames[appType]!].some(
              (n) => n.toLowerCase() === key.toLowerCase(),
            ),
          );
          const all = Object.entries(integrations).filter(([key]) => key.toLowerCase() === 'all');
          const expected =
            own.length > 0
              ? own[own.length - 1]![1] !== false
              : all.length > 0
                ? all[all.length - 1]![1] !== false
                : true;
          expect(integrationAllows(appType, integrations)).toBe(expected);
        },
      ),
    );
  });
});
