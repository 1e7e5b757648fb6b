import {
  ConnectorError,
  effectiveStart,
  type Connector,
  type ReadOptions,
  type StreamPage,
  type StreamSpec,
} from '../connector';
import { getJson, type HttpReaderOptions } from '../http-reader';

interface StripeList {
  object: 'list';
  has_more: boolean;
  data: (Record<string, unknown> & { id: string; created: number })[];
}

export interface StripeConnectorOptions extends HttpReaderOptions {
  /** The secret or restricted key (`sk_…`, `rk_…`). */
  secretKey: string;
  /** In place of https://api.stripe.com (tests, proxies). */
  baseUrl?: string;
  /** Pins the object shapes; the account's default applies when unset. */
  apiVersion?: string;
  /** Page size, 1-100. */
  pageSize?: number;
}

const paths: Record<string, string> = {
  customers: '/v1/customers',
  charges: '/v1/charges',
  invoices: '/v1/invoices',
  subscriptions: '/v1/subscriptions',
};

/** The cursor is the newest `created` (unix seconds) a read has loaded. */
const cursorTime = (cursor: string) => new Date(Number(cursor) * 1000);

/**
 * Stripe's list APIs, newest first with `starting_after` pagination. Incremental reads filter
 * on `created[gte]` from the saved cursor (minus the rolling window, which re-reads recent
 * objects for their later updates): Stripe lists by creation time, so an update to an object
 * older than the window is picked up only by a full re-sync (cursor reset).
 */
export class StripeConnector implements Connector {
  readonly appType = 'stripe';
  readonly streams: readonly StreamSpec[] = Object.keys(paths).map((name) => ({
    name,
    primaryKey: 'id',
    cursorField: 'created',
  }));
  private readonly baseUrl: string;

  constructor(private readonly options: StripeConnectorOptions) {
    if (!options.secretKey)
      throw new ConnectorError('invalid_config', 'stripe: credentials.secretKey is required', false);
    this.baseUrl = options.baseUrl ?? 'https://api.stripe.com';
  }

  private headers(): Record<string, string> {
    return {
      authorization: `Bearer ${this.options.secretKey}`,
      ...(this.options.apiVersion ? { 'stripe-version': this.options.apiVersion } : {}),
    };
  }

  async check(signal?: AbortSignal): Promise<void> {
    const url = new URL('/v1/customers', this.baseUrl);
    url.searchParams.set('limit', '1');
    await getJson<StripeList>('stripe', url, this.headers(), {
      ...this.options,
      ...(signal ? { signal } : {}),
    });
  }

  async *read(stream: string, options: ReadOptions): AsyncIterable<StreamPage> {
    const path = paths[stream];
    if (!path) throw new ConnectorError('unknown_stream', `stripe has no stream ${stream}`, false);
    const start = effectiveStart(options, cursorTime);
    let newest = options.cursor ? Number(options.cursor) : 0;
    let startingAfter: string | undefined;
    for (;;) {
      const url = new URL(path, this.baseUrl);
      url.searchParams.set('limit', String(this.options.pageSize ?? 100));
      if (start) url.searchParams.set('created[gte]', String(Math.floor(start.getTime() / 1000)));
      // Without it canceled subscriptions are left out.
      if (stream === 'subscriptions') url.searchParams.set('status', 'all');
      if (startingAfter) url.searchParams.set('starting_after', startingAfter);
      const { body } = await getJson<StripeList>('stripe', url, this.headers(), {
        ...this.options,
        ...(options.signal ? { signal: options.signal } : {}),
      });
      if (body.object !== 'list' || !Array.isArray(body.data))
        throw new ConnectorError('invalid_response', `stripe ${path} did not answer a list`, true);
      for (const record of body.data) newest = Math.max(newest, record.created);
      const last = body.data[body.data.length - 1];
      // The cursor is saved only once the whole read is done: pages come newest first, so a
      // cursor saved mid-read would skip the older objects not read yet.
      const done = !body.has_more || !last;
      yield {
        records: body.data,
        cursor: done ? (newest > 0 ? String(newest) : options.cursor) : options.cursor,
      };
      if (done) return;
      startingAfter = last.id;
    }
  }
}
