import type { AppRole } from './app.entity';

export interface AppTypeDefinition {
  name: string;
  /** The roles a connection of this type can take. */
  roles: readonly AppRole[];
}

/**
 * The platforms the service connects to. `appType` of an app and `syncType` of a source are
 * keys of this catalog.
 */
export const appCatalog = {
  web_tracking: { name: 'Web tracking (browser SDK)', roles: ['source'] },
  shopify: { name: 'Shopify', roles: ['source'] },
  stripe: { name: 'Stripe', roles: ['source'] },
  hubspot: { name: 'HubSpot', roles: ['source', 'destination'] },
  amplitude: { name: 'Amplitude', roles: ['source', 'destination'] },
  mixpanel: { name: 'Mixpanel', roles: ['source', 'destination'] },
  google_ads: { name: 'Google Ads', roles: ['source', 'destination'] },
  facebook_ads: { name: 'Meta Ads', roles: ['source', 'destination'] },
  braze: { name: 'Braze', roles: ['destination'] },
  customer_io: { name: 'Customer.io', roles: ['destination'] },
  onesignal: { name: 'OneSignal', roles: ['destination'] },
  webhook: { name: 'Webhook', roles: ['destination'] },
} as const satisfies Record<string, AppTypeDefinition>;

export type AppType = keyof typeof appCatalog;

export const appTypes = Object.keys(appCatalog) as AppType[];

export function appTypeDefinition(appType: string): AppTypeDefinition | undefined {
  return Object.hasOwn(appCatalog, appType) ? appCatalog[appType as AppType] : undefined;
}
