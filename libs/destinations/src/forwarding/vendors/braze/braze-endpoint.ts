import { httpUrl, InvalidConfig, requiredText } from '../../destination-settings';

/** The cluster hosts Braze lists (rest.iad-01.braze.com, rest.fra-01.braze.eu, ...). */
const BRAZE_HOST = /^https:\/\/rest\.[a-z0-9-]+\.braze\.(com|eu)$/;

/**
 * The tenant's Braze REST endpoint, or InvalidConfig. The API key travels to this host, so only
 * Braze's own hosts are taken from a tenant's config: no other domain, port, userinfo, path,
 * IP literal or spelling that a resolver would read as another host.
 */
export function brazeRestEndpoint(appConfig: Record<string, unknown>): string {
  const restEndpoint = httpUrl(
    requiredText(appConfig, 'restEndpoint', 'appConfig'),
    'appConfig.restEndpoint',
    {
      httpsOnly: true,
    },
  );
  if (!BRAZE_HOST.test(restEndpoint)) {
    throw new InvalidConfig(
      'appConfig.restEndpoint must be a Braze REST endpoint (https://rest.<cluster>.braze.com)',
    );
  }
  return restEndpoint;
}
