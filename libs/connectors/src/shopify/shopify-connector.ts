import {
  ConnectorError,
  effectiveStart,
  type Connector,
  type ReadOptions,
  type StreamPage,
  type StreamSpec,
} from '../connector';
import { getJson, type HttpReaderOptions } from '../http-reader';

export interface ShopifyConnectorOptions extends HttpReaderOptions {
  /** The shop's subdomain (`{shop}.myshopify.com`) or its full myshopify.com host. */
  shop: string;
  /** The Admin API access token (`shpat_…`). */
  accessToken: string;
  /** Admin API version, `YYYY-01|04|07|10` (a stable quarterly release); default {@link shopifyApiVersion}. */
  apiVersion?: string;
  /** In place of https://{shop}.myshopify.com (tests, proxies). */
  baseUrl?: string;
  /** Page size, 1-250. */
  pageSize?: number;
  /** How long to pause when the call-limit bucket is nearly full (the standard plan leaks 2 calls/s). */
  throttlePauseMs?: number;
}

const streamNames = ['orders', 'customers', 'products'] as const;

/** What a Shopify source imports: one warehouse table per stream. */
export const shopifyStreams: readonly StreamSpec[] = streamNames.map((name) => ({
  name,
  primaryKey: 'id',
  cursorField: 'updated_at',
}));

/**
 * The Admin API version asked for when config.apiVersion is not given: the one place it is named.
 *
 * Shopify releases a stable version at the start of each quarter (January, April, July, October,
 * 17:00 UTC) and supports each for at least 12 months after its release; a request to a version
 * past its support is served by the oldest supported one ("falls forward"), so answers change shape
 * without notice. 2024-10, the default before, left support in October 2025. 2026-10 (released
 * 2026-10-01) is the newest stable version as of 2026-11 and is supported until at least
 * 2027-10-01; 2026-07 would have run out three months sooner.
 *
 * Move it by 2027-07 (when 2027-07 is out and 2026-10 has three months left), after checking the
 * REST release notes of the versions in between for changes to orders, customers and products.
 */
export const shopifyApiVersion = '2026-10';

/** A stable Admin API version name: the year and a quarter's first month (not `unstable`, not an RC). */
export const shopifyApiVersionPattern = /^\d{4}-(01|04|07|10)$/;

/** The `rel="next"` URL of a Link header, as Shopify's own client parses it. */
export function nextPageUrl(link: string | null): string | undefined {
  if (!link) return undefined;
  for (const match of link.matchAll(/<([^<]+)>; rel="([^"]+)"/g)) if (match[2] === 'next') return match[1];
  return undefined;
}

/**
 * Shopify Admin REST (legacy since 2024-10, still served to custom apps): `updated_at_min`
 * for incremental reads, Link-header cursor pagination (a `page_info` request carries only
 * `limit`: the cursor holds the first request's filters), and the leaky-bucket call limit read
 * from X-Shopify-Shop-Api-Call-Limit, paused on before it overflows into 429s.
 */
export class ShopifyConnector implements Connector {
  readonly appType = 'shopify';
  readonly streams = shopifyStreams;
  private readonly baseUrl: string;
  private readonly version: string;

  constructor(private readonly options: ShopifyConnectorOptions) {
    if (!options.accessToken)
      throw new ConnectorError('invalid_config', 'shopify: credentials.accessToken is required', false);
    const shop = options.shop.replace(/\.myshopify\.com$/, '');
    if (!options.baseUrl && !/^[a-z0-9][a-z0-9-]*$/i.test(shop))
      throw new ConnectorError(
        'invalid_config',
        'shopify: config.shop must be the shop’s myshopify.com name',
        false,
      );
    this.baseUrl = options.baseUrl ?? `https://${shop}.myshopify.com`;
    if (options.apiVersion !== undefined && !shopifyApiVersionPattern.test(options.apiVersion))
      throw new ConnectorError(
        'invalid_config',
        `shopify: config.apiVersion must be a stable Admin API version, YYYY-01, -04, -07 or -10 (got ${JSON.stringify(options.apiVersion)})`,
        false,
      );
    this.version = options.apiVersion ?? shopifyApiVersion;
  }

  private get headers(): Record<string, string> {
    return { 'x-shopify-access-token': this.options.accessToken };
  }

  async check(signal?: AbortSignal): Promise<void> {
    await getJson('shopify', new URL(`/admin/api/${this.version}/shop.json`, this.baseUrl), this.headers, {
      ...this.options,
      ...(signal ? { signal } : {}),
    });
  }

  async *read(stream: string, options: ReadOptions): AsyncIterable<StreamPage> {
    if (!(streamNames as readonly string[]).includes(stream))
      throw new ConnectorError('unknown_stream', `shopify has no stream ${stream}`, false);
    const start = effectiveStart(options, (cursor) => new Date(cursor));
    let url: URL | undefined = new URL(`/admin/api/${this.version}/${stream}.json`, this.baseUrl);
    url.searchParams.set('limit', String(this.options.pageSize ?? 250));
    if (stream === 'orders') url.searchParams.set('status', 'any');
    if (start) url.searchParams.set('updated_at_min', start.toISOString());
    let newest = options.cursor ? new Date(options.cursor).getTime() : 0;
    while (url) {
      const { body, headers } = await getJson<Record<string, unknown>>('shopify', url, this.headers, {
        ...this.options,
        ...(options.signal ? { signal: options.signal } : {}),
      });
      const records = body[stream];
      if (!Array.isArray(records))
        throw new ConnectorError(
          'invalid_response',
          `shopify ${stream}.json did not answer a list of ${stream}`,
          true,
        );
      for (const record of records as Record<string, unknown>[]) {
        const updated = Date.parse(String(record.updated_at ?? ''));
        if (!Number.isNaN(updated)) newest = Math.max(newest, updated);
      }
      const next = nextPageUrl(headers.get('link'));
      url = next ? this.onShop(next, url, stream) : undefined;
      // The cursor moves only at the end: pages are not in updated_at order.
      yield {
        records: records as Record<string, unknown>[],
        cursor: url ? options.cursor : newest > 0 ? new Date(newest).toISOString() : options.cursor,
      };
      await this.pace(headers.get('x-shopify-shop-api-call-limit'), options.signal);
    }
  }

  /**
   * The next page's URL, only on the shop's own origin (scheme, host and port): a Link header is
   * the answer's to write, and a page elsewhere would receive the access token.
   */
  private onShop(next: string, current: URL, stream: string): URL {
    const url = URL.canParse(next, current.href) ? new URL(next, current) : undefined;
    if (!url || url.origin !== new URL(this.baseUrl).origin)
      throw new ConnectorError(
        'foreign_next_link',
        `shopify: the next page of ${stream} is on another host than the shop; stopped`,
        false,
        undefined,
        `Link rel="next" named ${next}`,
      );
    return url;
  }

  /** Waits for the bucket to leak when it is nearly full, rather than running into a 429. */
  private async pace(callLimit: string | null, signal?: AbortSignal): Promise<void> {
    const [used, size] = (callLimit ?? '').split('/').map(Number);
    if (used === undefined || size === undefined || !Number.isFinite(used) || !Number.isFinite(size)) return;
    if (size - used > 2) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, this.options.throttlePauseMs ?? 1000);
      signal?.addEventListener('abort', () => {
        clearTimeout(timer);
        resolve();
      });
    });
  }
}
