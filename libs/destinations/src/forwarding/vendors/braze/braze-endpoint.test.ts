import { InvalidConfig } from '../../destination-settings';
import { brazeRestEndpoint } from './braze-endpoint';

const notBraze = 'appConfig.restEndpoint must be a Braze REST endpoint (https://rest.<cluster>.braze.com)';

function refusal(appConfig: Record<string, unknown>): string {
  try {
    brazeRestEndpoint(appConfig);
  } catch (error) {
    expect(error).toBeInstanceOf(InvalidConfig);
    return (error as Error).message;
  }
  throw new Error(`accepted ${JSON.stringify(appConfig)}`);
}

describe('brazeRestEndpoint', () => {
  it('takes the clusters Braze lists, without a trailing slash', () => {
    expect(brazeRestEndpoint({ restEndpoint: 'https://rest.iad-01.braze.com' })).toBe(
      'https://rest.iad-01.braze.com',
    );
    expect(brazeRestEndpoint({ restEndpoint: 'https://rest.fra-01.braze.eu/' })).toBe(
      'https://rest.fra-01.braze.eu',
    );
    expect(brazeRestEndpoint({ restEndpoint: '  https://rest.au-01.braze.com  ' })).toBe(
      'https://rest.au-01.braze.com',
    );
  });

  it.each([
    ['another domain', 'https://evil.example.com'],
    ['a Braze URL in another host’s path', 'https://evil.io/https://rest.iad-01.braze.com'],
    ['Braze as a subdomain of another', 'https://rest.iad-01.braze.com.evil.io'],
    ['another domain ending like Braze', 'https://rest.iad-01.notbraze.com'],
    ['a port', 'https://rest.iad-01.braze.com:8443'],
    ['an IPv4 literal', 'https://10.0.0.1'],
    ['an IPv6 literal', 'https://[::1]'],
    ['uppercase', 'https://REST.IAD-01.BRAZE.COM'],
    ['a trailing dot', 'https://rest.iad-01.braze.com.'],
    ['a path', 'https://rest.iad-01.braze.com/users/track'],
    ['a query', 'https://rest.iad-01.braze.com?x=1'],
    ['a fragment', 'https://rest.iad-01.braze.com#x'],
    ['a nested cluster', 'https://rest.a.b.braze.com'],
    ['no cluster', 'https://rest..braze.com'],
    ['not the rest host', 'https://sdk.iad-01.braze.com'],
    ['a prefix before rest', 'https://xrest.iad-01.braze.com'],
    ['another top-level domain', 'https://rest.iad-01.braze.io'],
    ['a percent-encoded host', 'https://rest.%69ad.braze.com'],
    ['a backslash', 'https://rest.iad-01.braze.com\\@evil.io'],
  ])('refuses %s: %s', (_, restEndpoint) => {
    expect(refusal({ restEndpoint })).toBe(notBraze);
  });

  it('refuses plain http, credentials and what is not a URL, saying why', () => {
    expect(refusal({ restEndpoint: 'http://rest.iad-01.braze.com' })).toBe(
      'appConfig.restEndpoint must be an https URL',
    );
    expect(refusal({ restEndpoint: 'https://user:pw@rest.iad-01.braze.com' })).toBe(
      'appConfig.restEndpoint must not carry credentials',
    );
    // The URL parser reads a Braze host before an @ as userinfo: refused as credentials.
    expect(refusal({ restEndpoint: 'https://rest.iad-01.braze.com@evil.io' })).toBe(
      'appConfig.restEndpoint must not carry credentials',
    );
    expect(refusal({ restEndpoint: 'rest.iad-01.braze.com' })).toBe('appConfig.restEndpoint is not a URL');
    expect(refusal({})).toBe('appConfig.restEndpoint is required');
    expect(refusal({ restEndpoint: '   ' })).toBe('appConfig.restEndpoint is required');
  });
});
