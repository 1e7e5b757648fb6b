import { arrivalOrigin, segmentSettingsDocument } from './segment-settings';

// The settings document analytics-next loads decides where a page's events go: this host and
// nothing else. The route serving it (and its cache headers) is in segment-settings.test.ts.

function document(apiKey: string, apiHost: string, protocol: 'http' | 'https') {
  return {
    integrations: {
      'Segment.io': {
        apiKey,
        apiHost,
        protocol,
        unbundledIntegrations: [],
        addBundledMetadata: false,
        maybeBundledConfigIds: {},
      },
    },
    plan: {},
    edgeFunction: {},
    analyticsNextEnabled: true,
    middlewareSettings: {},
    enabledMiddleware: {},
    metrics: { sampleRate: 0 },
    legacyVideoPluginsEnabled: false,
    remotePlugins: [],
  };
}

describe('segmentSettingsDocument', () => {
  it('sends everything to this host’s /v1 over HTTPS, and nothing to Segment', () => {
    expect(segmentSettingsDocument('wk_1', 'https://track.example.com')).toStrictEqual(
      document('wk_1', 'track.example.com/v1', 'https'),
    );
  });

  it('keeps the port and plain HTTP of a development origin', () => {
    expect(segmentSettingsDocument('wk_2', 'http://127.0.0.1:8080')).toStrictEqual(
      document('wk_2', '127.0.0.1:8080/v1', 'http'),
    );
    expect(segmentSettingsDocument('wk_2', 'http://[::1]:8080/ignored/path')).toStrictEqual(
      document('wk_2', '[::1]:8080/v1', 'http'),
    );
  });
});

describe('arrivalOrigin', () => {
  it('is the local address and port the request arrived at', () => {
    expect(arrivalOrigin({ localAddress: '10.0.0.5', localPort: 8080 })).toBe('http://10.0.0.5:8080');
  });

  it('names an IPv4 peer of a dual-stack listener by its IPv4 address', () => {
    expect(arrivalOrigin({ localAddress: '::ffff:10.0.0.5', localPort: 3000 })).toBe('http://10.0.0.5:3000');
  });

  it('brackets an IPv6 address, including IPv4-mapped forms that are not dotted', () => {
    expect(arrivalOrigin({ localAddress: '::1', localPort: 3000 })).toBe('http://[::1]:3000');
    expect(arrivalOrigin({ localAddress: '::ffff:a00:5', localPort: 3000 })).toBe(
      'http://[::ffff:a00:5]:3000',
    );
    expect(arrivalOrigin({ localAddress: '::ffff:1:2', localPort: 3000 })).toBe('http://[::ffff:1:2]:3000');
    expect(arrivalOrigin({ localAddress: '2001:db8::ffff:10.0.0.5', localPort: 3000 })).toBe(
      'http://[2001:db8::ffff:10.0.0.5]:3000',
    );
  });

  it('falls back to the loopback address and port 80 when the socket does not say', () => {
    expect(arrivalOrigin({})).toBe('http://127.0.0.1:80');
  });
});
