import type { DestinationKind } from '@pipeline/tenancy';
import type { AppRole } from './app.entity';

export interface AppTypeDefinition {
  name: string;
  /** The roles a connection of this type can take. */
  roles: readonly AppRole[];
  /** What a source of this type can import (one warehouse table each). */
  importTasks?: readonly string[];
  /** The kind of forwarding destination, for destination-role types. */
  destinationKind?: DestinationKind;
}

/**
 * The platforms the service connects to. `appType` of an app and `syncType` of a source are
 * keys of this catalog.
 */
export const appCatalog = {
  web_tracking: { name: 'Web tracking (browser SDK)', roles: ['source'], importTasks: [] },
  shopify: {
    name: 'Shopify',
    roles: ['source'],
    importTasks: ['orders', 'customers', 'products'],
  },
  stripe: {
    name: 'Stripe',
    roles: ['source'],
    importTasks: ['customers', 'charges', 'invoices', 'subscriptions'],
  },
  hubspot: {
    name: 'HubSpot',
    roles: ['source', 'destination'],
    importTasks: ['contacts', 'companies', 'deals'],
    destinationKind: 'customer_data',
  },
  amplitude: {
    name: 'Amplitude',
    roles: ['source', 'destination'],
    importTasks: ['events', 'cohorts'],
    destinationKind: 'product_analytics',
  },
  mixpanel: {
    name: 'Mixpanel',
    roles: ['source', 'destination'],
    importTasks: ['events', 'cohorts'],
    destinationKind: 'product_analytics',
  },
  google_ads: {
    name: 'Google Ads',
    roles: ['source', 'destination'],
    importTasks: ['campaigns', 'ad_groups', 'ad_performance'],
    destinationKind: 'advertising',
  },
  facebook_ads: {
    name: 'Meta Ads',
    roles: ['source', 'destination'],
    importTasks: ['campaigns', 'ad_sets', 'ad_insights'],
    destinationKind: 'advertising',
  },
  braze: { name: 'Braze', roles: ['destination'], destinationKind: 'messaging' },
  customer_io: { name: 'Customer.io', roles: ['destination'], destinationKind: 'messaging' },
  segment: { name: 'Segment-compatible HTTP API', roles: ['destination'], destinationKind: 'customer_data' },
  onesignal: { name: 'OneSignal', roles: ['destination'], destinationKind: 'push' },
  webhook: { name: 'Webhook', roles: ['destination'], destinationKind: 'webhook' },
} as const satisfies Record<string, AppTypeDefinition>;

export type AppType = keyof typeof appCatalog;

export const appTypes = Object.keys(appCatalog) as AppType[];

export function appTypeDefinition(appType: string): AppTypeDefinition | undefined {
  return Object.hasOwn(appCatalog, appType) ? appCatalog[appType as AppType] : undefined;
}
