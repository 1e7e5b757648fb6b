import { eventTypes, validateEvent } from './index';

// Clients send more than the contract names (SDK versions, Segment libraries' own context
// fields, destination options): the contract is open wherever it says so, and an extra key
// never turns an event away.
const who = { messageId: 'm-1', timestamp: '2026-03-01T10:00:00.000Z', anonymousId: 'anon-1' };
const minimal: Record<string, Record<string, unknown>> = {
  track: { type: 'track', event: 'Signed Up' },
  page: { type: 'page' },
  screen: { type: 'screen' },
  identify: { type: 'identify', userId: 'u1' },
  group: { type: 'group', groupId: 'g1' },
  alias: { type: 'alias', userId: 'u1', previousId: 'anon-1' },
};

describe('the event contract takes keys it does not name', () => {
  it('covers every event type', () => {
    expect(Object.keys(minimal).sort()).toEqual([...eventTypes].sort());
  });

  it.each(Object.keys(minimal))(
    '%s: at the top, in each part of the context, and in integrations',
    (type) => {
      const event = {
        ...who,
        ...minimal[type],
        futureField: { nested: [1, 'two'] },
        context: {
          library: { name: 'analytics.js', version: '2.0.0', flavor: 'next' },
          session: { id: 's-1', startedAt: '2026-03-01T09:00:00.000Z' },
          page: { url: 'https://example.com/a', search: '?q=1', hash: '#top' },
          screen: { width: 1280, height: 800, density: 2 },
          timezone: 'Europe/Berlin',
          network: { wifi: true },
        },
        integrations: { All: true, Amplitude: { session_id: 1_700_000_000 } },
      };
      // screen is Segment's type: its routes take it, /collect does not.
      const result = validateEvent(event, Infinity, type === 'screen' ? 'segment' : 'collect');
      expect(result.valid ? [] : result.errors.map((e) => e.message)).toEqual([]);
    },
  );
});
