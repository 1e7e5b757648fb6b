import { mergeConsent, parseConsent, stampConsent } from './consent';

describe('consent', () => {
  it('merges booleans over the current state and reports other values', () => {
    expect(mergeConsent({ analytics: true }, { marketing: false, ads: 'yes', analytics: false })).toEqual({
      consent: { analytics: false, marketing: false },
      ignored: ['ads'],
    });
    expect(mergeConsent({ analytics: true }, null)).toEqual({
      consent: { analytics: true },
      ignored: ['(not an object)'],
    });
  });

  it('stamps every event with the consent given, without changing the queued events', () => {
    const queued = [{ messageId: '1', context: { page: { path: '/' } } }, { messageId: '2' }];
    const stamped = stampConsent(queued, { analytics: false, marketing: true });
    expect(stamped).toEqual([
      { messageId: '1', context: { page: { path: '/' }, consent: { analytics: false, marketing: true } } },
      { messageId: '2', context: { consent: { analytics: false, marketing: true } } },
    ]);
    expect(queued[0]).toEqual({ messageId: '1', context: { page: { path: '/' } } });
  });

  it('overrides a consent the event carried with the one in force at send time', () => {
    const queued = [{ messageId: '1', context: { consent: { analytics: true } } }];
    expect(stampConsent(queued, { analytics: false })[0]?.context).toEqual({ consent: { analytics: false } });
  });

  it('leaves events unstamped while no consent was ever given (the host reads that as granted)', () => {
    const queued: { messageId: string; context?: Record<string, unknown> }[] = [{ messageId: '1' }];
    expect(stampConsent(queued, null)).toEqual(queued);
    expect(stampConsent(queued, {})).toEqual(queued);
  });

  it('reads stored consent back, refusing anything that is not a map of booleans', () => {
    expect(parseConsent('{"analytics":true}')).toEqual({ analytics: true });
    expect(parseConsent('{"analytics":"true"}')).toBeNull();
    expect(parseConsent('[true]')).toBeNull();
  });
});
