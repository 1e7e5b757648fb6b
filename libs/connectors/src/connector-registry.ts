import { sharedGuardedFetch } from '@pipeline/egress';
import { ConnectorError, type Connector } from './connector';
import type { HttpReaderOptions } from './http-reader';
import { ShopifyConnector } from './shopify/shopify-connector';
import { StripeConnector } from './stripe/stripe-connector';

export interface SourceApp {
  appType: string;
  /** The app's decrypted credentials. */
  credentials: Record<string, unknown>;
  config: Record<string, unknown>;
}

const text = (value: unknown) => (typeof value === 'string' ? value : '');

/**
 * The connector of a source app, built from its credentials and config (fields: README,
 * "Source connectors"); undefined for app types with no connector.
 */
export function connectorFor(
  app: SourceApp,
  options: HttpReaderOptions & {
    baseUrls?: Partial<Record<string, string>>;
    /** Private ranges a tenant-named host may reach all the same (EGRESS_ALLOW_PRIVATE_RANGES). */
    allowPrivateRanges?: readonly string[];
  } = {},
): Connector | undefined {
  const baseUrl = options.baseUrls?.[app.appType];
  // A host the tenant names (a shop) and the pages it links to go through the guarded fetch;
  // an operator's base URL (VENDOR_BASE_URL_*) is trusted as configured.
  const fetch = options.fetch ?? (baseUrl ? undefined : sharedGuardedFetch(options.allowPrivateRanges));
  const common = { ...options, ...(baseUrl ? { baseUrl } : {}), ...(fetch ? { fetch } : {}) };
  if (app.appType === 'stripe') {
    return new StripeConnector({
      ...common,
      secretKey: text(app.credentials.secretKey) || text(app.credentials.apiKey),
      ...(text(app.config.apiVersion) ? { apiVersion: text(app.config.apiVersion) } : {}),
    });
  }
  if (app.appType === 'shopify') {
    const shop = text(app.config.shop) || text(app.credentials.shop);
    if (!shop && !baseUrl)
      throw new ConnectorError('invalid_config', 'shopify: config.shop is required', false);
    return new ShopifyConnector({
      ...common,
      shop,
      accessToken: text(app.credentials.accessToken),
      ...(text(app.config.apiVersion) ? { apiVersion: text(app.config.apiVersion) } : {}),
    });
  }
  return undefined;
}
