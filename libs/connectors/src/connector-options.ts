import { sharedGuardedFetch } from '@pipeline/egress';
import type { HttpReaderOptions } from './http-reader';

/** A source app as its connector is built from it: the app's decrypted credentials and config. */
export interface SourceApp {
  appType: string;
  credentials: Record<string, unknown>;
  config: Record<string, unknown>;
}

/** How the sync engine builds connectors: HTTP settings and the operator's base URLs. */
export interface ConnectorOptions extends HttpReaderOptions {
  /** Base URLs by app type (VENDOR_BASE_URL_*), in place of the vendor's host. */
  baseUrls?: Partial<Record<string, string>>;
  /** Private ranges a tenant-named host may reach all the same (EGRESS_ALLOW_PRIVATE_RANGES). */
  allowPrivateRanges?: readonly string[];
}

/** What one connector is built with: the HTTP settings, and the base URL when the operator set one. */
export type ConnectorHttpOptions = HttpReaderOptions & { baseUrl?: string };

/**
 * The HTTP settings of an app type's connector. A host the tenant names (a shop) and the pages
 * it links to go through the guarded fetch; an operator's base URL (VENDOR_BASE_URL_*) is
 * trusted as configured.
 */
export function connectorHttpOptions(appType: string, options: ConnectorOptions = {}): ConnectorHttpOptions {
  const { baseUrls, allowPrivateRanges, ...http } = options;
  const baseUrl = baseUrls?.[appType];
  const fetch = http.fetch ?? (baseUrl ? undefined : sharedGuardedFetch(allowPrivateRanges));
  return { ...http, ...(baseUrl ? { baseUrl } : {}), ...(fetch ? { fetch } : {}) };
}

/** A string field of credentials or config, '' when absent or not a string. */
export const textField = (source: Record<string, unknown>, field: string): string => {
  const value = source[field];
  return typeof value === 'string' ? value : '';
};
