import {
  connectorHttpOptions,
  type Connector,
  type ConnectorOptions,
  type SourceApp,
} from '@pipeline/connectors';
import {
  vendorClientOptions,
  type Forwarder,
  type ForwarderOptions,
  type SubjectDeletionClient,
} from '@pipeline/destinations';
import type { ConsentGroup, DestinationCategory } from '@pipeline/events';
import { consentGroupOf, rolesOf, type AnyAppType, type AppRole } from './app-type';
import { amplitude } from './app-types/amplitude';
import { braze } from './app-types/braze';
import { clickhouseWarehouse } from './app-types/clickhouse-warehouse';
import { customerIo } from './app-types/customer-io';
import { googleAds } from './app-types/google-ads';
import { hubspot } from './app-types/hubspot';
import { mixpanel } from './app-types/mixpanel';
import { metaConversions } from './app-types/meta-conversions';
import { onesignal } from './app-types/onesignal';
import { postgresWarehouse } from './app-types/postgres-warehouse';
import { segment } from './app-types/segment';
import { shopify } from './app-types/shopify';
import { stripe } from './app-types/stripe';
import { webhook } from './app-types/webhook';
import { webTracking } from './app-types/web-tracking';

/**
 * The app catalog: every app type the services know, one definition each. `appType` of an app
 * and `syncType` of a source are its keys. Every other list of app types derives from it.
 */
export const appCatalog: readonly AnyAppType[] = [
  webTracking,
  shopify,
  stripe,
  hubspot,
  amplitude,
  mixpanel,
  braze,
  customerIo,
  segment,
  onesignal,
  metaConversions,
  googleAds,
  webhook,
  postgresWarehouse,
  clickhouseWarehouse,
];

const byType = new Map(appCatalog.map((definition) => [definition.appType, definition]));

export const appTypes: readonly string[] = appCatalog.map((definition) => definition.appType);

/** The definition of an app type, or undefined for one the catalog does not have. */
export const appTypeDefinition = (appType: string): AnyAppType | undefined => byType.get(appType);

/** What an app of this type may be: source (tracking or imports), destination (forwards), or both; or a warehouse. */
export const rolesOfAppType = (appType: string): AppRole[] => {
  const definition = byType.get(appType);
  return definition ? rolesOf(definition) : [];
};

/** The streams a source of this type can import (its import tasks); none for tracking sources. */
export const importTasksOf = (appType: string): string[] =>
  byType.get(appType)?.imports?.streams.map((stream) => stream.name) ?? [];

/** The category of a destination app type (decides its consent gate), or undefined. */
export const destinationCategoryOf = (appType: string): DestinationCategory | undefined =>
  byType.get(appType)?.forwards?.category;

export const consentGroupOfAppType = (appType: string): ConsentGroup | null => {
  const definition = byType.get(appType);
  return definition ? consentGroupOf(definition) : null;
};

/** The app types events can be forwarded to, each run by its own `delivery --destination <type>`. */
export const forwardingAppTypes: readonly string[] = appCatalog
  .filter((d) => d.forwards)
  .map((d) => d.appType);

/** The app types the sync engine imports from. */
export const importingAppTypes: readonly string[] = appCatalog.filter((d) => d.imports).map((d) => d.appType);

/** The app types that are a customer-owned warehouse (checked by connecting, not by URL). */
export const warehouseAppTypes: readonly string[] = appCatalog
  .filter((d) => d.warehouse)
  .map((d) => d.appType);

/** Every kind `delivery --destination <kind>` runs, each in its own consumer groups. */
export const deliveryKinds: readonly string[] = ['log', 'warehouse', ...forwardingAppTypes];

export const isDeliveryKind = (value: string): boolean => deliveryKinds.includes(value);

/**
 * The origin (scheme, host, port) an app's credentials are sent to when its config (and an
 * integration's config.global) chooses it; null when the vendor's host is fixed or none is set.
 */
export function credentialsOriginOf(
  appType: string,
  config: Record<string, unknown>,
  global?: Record<string, unknown>,
): string | null {
  const recipient = byType.get(appType)?.recipient?.(config, global);
  if (recipient === undefined) return null;
  // A URL without an http(s) origin (a warehouse's postgres:// or clickhouse://host:port) is its own origin.
  const origin = URL.canParse(recipient) ? new URL(recipient).origin : 'null';
  return origin === 'null' ? recipient : origin;
}

/** App types whose vendor host VENDOR_BASE_URL_<APP TYPE> replaces, by who reads it. */
export const baseUrlAppTypes = {
  /** Delivery sends to these. */
  forwarding: appCatalog.filter((d) => d.forwards && d.vendorHost).map((d) => d.appType),
  /** The control plane imports from and runs integrations to these. */
  all: appCatalog.filter((d) => (d.forwards || d.imports) && d.vendorHost).map((d) => d.appType),
} as const;

/** The vendor client of a destination app type, or undefined when events cannot be forwarded to it. */
export function forwarderFor(appType: string, options: ForwarderOptions = {}): Forwarder | undefined {
  const definition = byType.get(appType);
  if (!definition?.forwards) return undefined;
  // Only an app type with a vendor host takes the operator's base URL; a webhook's URL is
  // always the tenant's and always goes through the guarded fetch.
  const baseUrl = definition.vendorHost ? options.baseUrls?.[appType] : undefined;
  return definition.forwards.forwarder(vendorClientOptions(options, baseUrl));
}

/**
 * The user deletion client of a destination app type, or undefined when the vendor has none
 * (`not_supported`) or events are not forwarded to it. Base URLs as for forwarderFor.
 */
export function deletionClientFor(
  appType: string,
  options: ForwarderOptions = {},
): SubjectDeletionClient | undefined {
  const definition = byType.get(appType);
  if (!definition?.forwards?.deletes) return undefined;
  const baseUrl = definition.vendorHost ? options.baseUrls?.[appType] : undefined;
  return definition.forwards.deletes(vendorClientOptions(options, baseUrl));
}

/** The connector of a source app, or undefined for app types with none (tracking sources, destinations). */
export function connectorFor(app: SourceApp, options: ConnectorOptions = {}): Connector | undefined {
  const definition = byType.get(app.appType);
  if (!definition?.imports) return undefined;
  return definition.imports.connector(
    { credentials: app.credentials, config: app.config },
    connectorHttpOptions(app.appType, options),
  );
}
