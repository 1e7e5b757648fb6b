/**
 * HubSpot source connector (app type `hubspot`): the CRM v3 objects API of one HubSpot
 * account, read with a private app's access token.
 *
 * Credentials: `accessToken` (a private app token, `pat-…`, sent as `Authorization: Bearer`;
 * scopes `crm.objects.contacts.read`, `crm.objects.companies.read`,
 * `crm.objects.deals.read`, and the matching `crm.schemas.*.read` for the property lists).
 * Config: none required.
 *
 * Streams `contacts`, `companies` and `deals` (warehouse tables `hubspot_contacts`,
 * `hubspot_companies`, `hubspot_deals`).
 * Each record is the object's `properties` flattened to top-level fields (every property the
 * account defines, as HubSpot returns them: strings or null), then `id`, `created_at`,
 * `updated_at` (ISO 8601, from the object's createdAt/updatedAt) and `archived`, which win
 * over a property of the same name. Primary key `id`, cursor field `updated_at`. The timestamps
 * are snake_case, not HubSpot's camelCase, because the warehouse writer only makes columns of
 * lowercase names (StreamTableWriter): `createdAt` would live only in `_raw`.
 *
 * Reads:
 * - Full read (no cursor, no start date): `GET /crm/v3/objects/{object}?limit=100&properties=…`
 *   with `after` paging (`paging.next.after`). Pages come in id order, so the cursor (the newest
 *   `updated_at`) is given only with the last page. An account whose property names pass 6,000
 *   characters in all is read with the search API from 1970 instead (the names go in the body).
 * - Incremental read: `POST /crm/v3/objects/{object}/search`, filter `lastmodifieddate`
 *   (contacts) / `hs_lastmodifieddate` (companies, deals) GTE the cursor (minus the rolling window,
 *   never before the start date), sorted ascending, 200 per page. The cursor moves with every
 *   page. The search API answers at most 10,000 results per query (a page past that is a 400),
 *   so before reaching it the connector starts a new search from the last modified date it saw
 *   (GTE: the records of that instant come again; the warehouse upsert absorbs them). Should
 *   one instant hold a whole window of 10,000 records, that instant is paged on its own by
 *   `hs_object_id`, then the read goes on after it.
 * Search requests are paced 200 ms apart (HubSpot allows five per second per account).
 * Errors: 429 and 5xx are retried by the HttpReader (HubSpot sends no Retry-After on its
 * secondly/daily limits; the backoff applies); 401/403 are `invalid_credentials`.
 */
import {
  ConnectorError,
  effectiveStart,
  type Connector,
  type ReadOptions,
  type SourceRecord,
  type StreamPage,
  type StreamSpec,
} from '../connector';
import { getJson, postJson, type HttpReaderOptions } from '../http-reader';

export interface HubSpotConnectorOptions extends HttpReaderOptions {
  /** The private app's access token. */
  accessToken: string;
  /** In place of https://api.hubapi.com (tests, proxies). */
  baseUrl?: string;
  /** List page size, 1-100. */
  pageSize?: number;
  /** Search page size, 1-200. */
  searchPageSize?: number;
  /** Results one search query may reach before it is restarted; HubSpot's cap is 10,000. */
  searchWindow?: number;
  /** Least time between two search requests: HubSpot allows 5 per second per account. */
  searchIntervalMs?: number;
  /** The clock the search pacing reads; Date.now unless a test moves it with its sleep. */
  now?: () => number;
}

/** A CRM object as the v3 API answers it. */
export interface HubSpotObject {
  id: string;
  properties: Record<string, string | null>;
  createdAt: string;
  updatedAt: string;
  archived?: boolean;
}

interface HubSpotPage {
  results: HubSpotObject[];
  paging?: { next?: { after?: string } };
  total?: number;
}

interface Filter {
  propertyName: string;
  operator: 'GTE' | 'GT' | 'EQ';
  value: string;
}

/** The last-modified property the search API filters and sorts each object on. */
const modifiedProperty: Record<string, string> = {
  contacts: 'lastmodifieddate',
  companies: 'hs_lastmodifieddate',
  deals: 'hs_lastmodifieddate',
};

/** The longest `properties` query parameter a list request carries; longer lists use search. */
export const MAX_LIST_PROPERTIES_CHARS = 6000;

/** HubSpot's cap on the results of one search query. */
export const HUBSPOT_SEARCH_CAP = 10_000;

/** An object as a warehouse record: its properties, then its own fields. */
export function hubspotRecord(object: HubSpotObject): SourceRecord {
  return {
    ...object.properties,
    id: object.id,
    created_at: object.createdAt,
    updated_at: object.updatedAt,
    archived: object.archived ?? false,
  };
}

/** What a HubSpot source imports: one warehouse table per CRM object. */
export const hubspotStreams: readonly StreamSpec[] = Object.keys(modifiedProperty).map((name) => ({
  name,
  primaryKey: 'id',
  cursorField: 'updated_at',
}));

const pause = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve();
    });
  });

export class HubSpotConnector implements Connector {
  readonly appType = 'hubspot';
  readonly streams = hubspotStreams;
  private readonly baseUrl: string;
  private lastSearchAt = 0;

  constructor(private readonly options: HubSpotConnectorOptions) {
    if (!options.accessToken)
      throw new ConnectorError('invalid_config', 'hubspot: credentials.accessToken is required', false);
    this.baseUrl = options.baseUrl ?? 'https://api.hubapi.com';
  }

  private get headers(): Record<string, string> {
    return { authorization: `Bearer ${this.options.accessToken}` };
  }

  private http(signal?: AbortSignal) {
    return { ...this.options, ...(signal ? { signal } : {}) };
  }

  async check(signal?: AbortSignal): Promise<void> {
    const url = new URL('/crm/v3/objects/contacts', this.baseUrl);
    url.searchParams.set('limit', '1');
    await getJson('hubspot', url, this.headers, this.http(signal));
  }

  /** Every property the account defines for the object, so records carry all of them. */
  private async propertyNames(stream: string, signal?: AbortSignal): Promise<string[]> {
    const { body } = await getJson<{ results?: { name?: unknown }[] }>(
      'hubspot',
      new URL(`/crm/v3/properties/${stream}`, this.baseUrl),
      this.headers,
      this.http(signal),
    );
    if (!Array.isArray(body.results))
      throw new ConnectorError(
        'invalid_response',
        `hubspot properties/${stream} did not answer a list`,
        true,
      );
    return body.results.map((p) => p.name).filter((n): n is string => typeof n === 'string' && n !== '');
  }

  async *read(stream: string, options: ReadOptions): AsyncIterable<StreamPage> {
    if (!Object.hasOwn(modifiedProperty, stream))
      throw new ConnectorError('unknown_stream', `hubspot has no stream ${stream}`, false);
    const properties = await this.propertyNames(stream, options.signal);
    const start = effectiveStart(options, (cursor) => new Date(cursor));
    if (start) yield* this.search(stream, properties, start, options);
    // Hundreds of custom properties would make the list URL longer than servers take (HubSpot
    // answers 414; Node 431 past 16 KB): the search API carries them in its body instead.
    else if (properties.join(',').length > MAX_LIST_PROPERTIES_CHARS)
      yield* this.search(stream, properties, new Date(0), options);
    else yield* this.list(stream, properties, options);
  }

  private async *list(stream: string, properties: string[], options: ReadOptions): AsyncIterable<StreamPage> {
    let after: string | undefined;
    let newest = 0;
    for (;;) {
      const url = new URL(`/crm/v3/objects/${stream}`, this.baseUrl);
      url.searchParams.set('limit', String(this.options.pageSize ?? 100));
      if (properties.length > 0) url.searchParams.set('properties', properties.join(','));
      url.searchParams.set('archived', 'false');
      if (after) url.searchParams.set('after', after);
      const { body } = await getJson<HubSpotPage>('hubspot', url, this.headers, this.http(options.signal));
      const records = this.recordsOf(stream, body);
      for (const record of records) newest = Math.max(newest, Date.parse(String(record.updated_at)) || 0);
      after = body.paging?.next?.after;
      // Pages come in id order: the cursor is the newest updated_at once every page is read.
      yield {
        records,
        cursor: after ? options.cursor : newest > 0 ? new Date(newest).toISOString() : options.cursor,
      };
      if (!after) return;
    }
  }

  private async *search(
    stream: string,
    properties: string[],
    start: Date,
    options: ReadOptions,
  ): AsyncIterable<StreamPage> {
    const modified = modifiedProperty[stream] as string;
    const window = Math.min(this.options.searchWindow ?? HUBSPOT_SEARCH_CAP, HUBSPOT_SEARCH_CAP);
    const limit = Math.min(this.options.searchPageSize ?? 200, window);
    let cursor = options.cursor;
    let from = start.getTime();
    let operator: 'GTE' | 'GT' = 'GTE';
    for (;;) {
      // One query, until its results end or its window would run past the cap.
      let after: string | undefined;
      let taken = 0;
      let lastModified = from;
      let lastModifiedCount = 0;
      for (;;) {
        const body = await this.searchPage(
          stream,
          [{ propertyName: modified, operator, value: String(from) }],
          modified,
          properties,
          Math.min(limit, window - taken),
          after,
          options.signal,
        );
        const records = this.recordsOf(stream, body);
        for (const record of records) {
          const time = Date.parse(String(record.updated_at));
          if (Number.isNaN(time)) continue;
          if (time === lastModified) lastModifiedCount += 1;
          else if (time > lastModified) {
            lastModified = time;
            lastModifiedCount = 1;
          }
        }
        taken += records.length;
        after = body.paging?.next?.after;
        if (lastModified > 0) cursor = new Date(lastModified).toISOString();
        yield { records, cursor };
        if (!after || records.length === 0) return;
        if (taken >= window) break;
      }
      if (lastModifiedCount >= window) {
        // The whole window was one instant: page that instant by id, then go on after it.
        yield* this.searchInstant(stream, properties, lastModified, window, limit, cursor, options.signal);
        from = lastModified;
        operator = 'GT';
      } else {
        from = lastModified;
        operator = 'GTE';
      }
    }
  }

  /** Every object last modified at `instant`, by hs_object_id, restarting before each cap. */
  private async *searchInstant(
    stream: string,
    properties: string[],
    instant: number,
    window: number,
    limit: number,
    cursor: string | null,
    signal?: AbortSignal,
  ): AsyncIterable<StreamPage> {
    const modified = modifiedProperty[stream] as string;
    let lastId = '0';
    for (;;) {
      // The filter stays the same for the whole query: `after` pages within it.
      const since = lastId;
      let after: string | undefined;
      let taken = 0;
      for (;;) {
        const body = await this.searchPage(
          stream,
          [
            { propertyName: modified, operator: 'EQ', value: String(instant) },
            { propertyName: 'hs_object_id', operator: 'GT', value: since },
          ],
          'hs_object_id',
          properties,
          Math.min(limit, window - taken),
          after,
          signal,
        );
        const records = this.recordsOf(stream, body);
        const last = records.at(-1);
        if (last) lastId = String(last.id);
        taken += records.length;
        after = body.paging?.next?.after;
        yield { records, cursor };
        if (!after || records.length === 0) return;
        if (taken >= window) break;
      }
    }
  }

  private async searchPage(
    stream: string,
    filters: Filter[],
    sortBy: string,
    properties: string[],
    limit: number,
    after: string | undefined,
    signal?: AbortSignal,
  ): Promise<HubSpotPage> {
    // Paced rather than run into the search API's own limit (5 requests/s, then 429s).
    const now = this.options.now ?? Date.now;
    const wait = this.lastSearchAt + (this.options.searchIntervalMs ?? 200) - now();
    if (wait > 0) await (this.options.sleep ?? pause)(wait, signal);
    this.lastSearchAt = now();
    const { body } = await postJson<HubSpotPage>(
      'hubspot',
      new URL(`/crm/v3/objects/${stream}/search`, this.baseUrl),
      this.headers,
      {
        filterGroups: [{ filters }],
        sorts: [{ propertyName: sortBy, direction: 'ASCENDING' }],
        properties,
        limit,
        ...(after ? { after } : {}),
      },
      this.http(signal),
    );
    return body;
  }

  private recordsOf(stream: string, body: HubSpotPage): SourceRecord[] {
    if (!Array.isArray(body.results))
      throw new ConnectorError(
        'invalid_response',
        `hubspot ${stream} did not answer a list of results`,
        true,
      );
    return body.results.map(hubspotRecord);
  }
}
