import {
  ConnectorError,
  type Connector,
  type ReadOptions,
  type StreamPage,
  type StreamSpec,
} from '../connector';
import { getJson, type HttpReaderOptions } from '../http-reader';

export interface StripeConnectorOptions extends HttpReaderOptions {
  /** The secret or restricted key (`sk_…`, `rk_…`). */
  secretKey: string;
  /** In place of https://api.stripe.com (tests, proxies). */
  baseUrl?: string;
  /** Pins the object shapes; the account's default applies when unset. */
  apiVersion?: string;
  /** Page size, 1-100. */
  pageSize?: number;
  /** The local clock, in ms (tests): decides whether a cursor is within Stripe's 30 days of events. */
  now?: () => number;
}

const paths: Record<string, string> = {
  customers: '/v1/customers',
  charges: '/v1/charges',
  invoices: '/v1/invoices',
  subscriptions: '/v1/subscriptions',
};

/** What a Stripe source imports: one warehouse table per stream. */
export const stripeStreams: readonly StreamSpec[] = Object.keys(paths).map((name) => ({
  name,
  primaryKey: 'id',
  cursorField: 'created',
}));

interface StripeEvent {
  id: string;
  type: string;
  created: number;
  data?: { object?: Record<string, unknown> & { id?: unknown; object?: unknown } };
}

/**
 * The events that carry each stream's object in `data.object`, named one by one: `types[]`
 * takes exact names only (wildcards are for the single `type` filter), at most 20, and a
 * pattern such as `customer.*` would also match `customer.subscription.*`, `customer.source.*`
 * and `customer.tax_id.*`, whose objects are not customers. `invoice.upcoming` is left out (its
 * invoice has no id). Events of any other type are dropped by the `object` check as well.
 */
export const stripeEventTypes: Record<string, { object: string; types: readonly string[] }> = {
  customers: { object: 'customer', types: ['customer.created', 'customer.updated', 'customer.deleted'] },
  charges: {
    object: 'charge',
    types: [
      'charge.captured',
      'charge.expired',
      'charge.failed',
      'charge.pending',
      'charge.refunded',
      'charge.succeeded',
      'charge.updated',
    ],
  },
  invoices: {
    object: 'invoice',
    types: [
      'invoice.created',
      'invoice.deleted',
      'invoice.finalization_failed',
      'invoice.finalized',
      'invoice.marked_uncollectible',
      'invoice.overdue',
      'invoice.paid',
      'invoice.payment_action_required',
      'invoice.payment_failed',
      'invoice.payment_succeeded',
      'invoice.sent',
      'invoice.updated',
      'invoice.voided',
      'invoice.will_be_due',
    ],
  },
  subscriptions: {
    object: 'subscription',
    types: [
      'customer.subscription.created',
      'customer.subscription.deleted',
      'customer.subscription.paused',
      'customer.subscription.pending_update_applied',
      'customer.subscription.pending_update_expired',
      'customer.subscription.resumed',
      'customer.subscription.trial_will_end',
      'customer.subscription.updated',
    ],
  },
};

/**
 * Stripe keeps events retrievable for 30 days. A cursor older than this (an hour short of it,
 * for the time a sync takes) cannot be read from the Events API without a gap, so the read
 * falls back to a full re-list of the objects.
 */
export const stripeEventRetentionMs = 30 * 24 * 3600_000 - 3600_000;

/**
 * How far behind the API's clock (its Date header) a cursor stays: an event written in the
 * second a list was answered may show up a moment later.
 */
const settleSeconds = 60;

// The cursor is unix seconds (as before events were read): every change at or before it is loaded.

/** The API's clock when it answered, in unix seconds (the Date header; the local clock without one). */
const answeredAt = (headers: Headers, now: number) => {
  const date = Date.parse(headers.get('date') ?? '');
  return Math.floor((Number.isNaN(date) ? now : date) / 1000);
};

/**
 * Stripe: a first read (no cursor) lists the objects, newest first with `starting_after`
 * (bounded by the start date); its cursor is the time the listing began (the API's clock less
 * a minute), saved once the whole list is read, so a change made while it ran is read again next
 * time rather than missed.
 *
 * Later reads follow the Events API: `GET /v1/events` with the stream's `types[]` and
 * `created[gt]=<cursor>`, and each event's `data.object` (the object as of that event) is the
 * record. So an object created long ago and updated since the last sync is read with its new
 * values, which a list by `created` never returns. Events are listed newest first, but must be
 * loaded oldest first (a later state must win, and the cursor may only cover what is loaded):
 * the read walks `starting_after` to the oldest page, loads it, then moves to newer pages with
 * `ending_before=<newest event of the page>` (each page newest first, loaded in reverse). Within
 * a page an object's latest state is kept. After each page the cursor is the newest `created`
 * on it less one second (another event of that second may be on the next page): a read that
 * fails mid-way resumes from there, loading no less than it missed and at worst one second's
 * events again (re-loading an older snapshot is undone by the newer events that follow it in
 * the same read). A read that ends moves the cursor to the API's clock less a minute at most.
 *
 * Deleted objects: `customer.deleted` and `invoice.deleted` (drafts) give the object with
 * `deleted: true`, so the warehouse row says the object is gone rather than keeping its last
 * state silently. `customer.subscription.deleted` is a cancellation: the subscription still
 * exists (status `canceled`, as a full list with `status=all` shows it) and is loaded as it is.
 *
 * Stripe keeps events for 30 days: a cursor older than that falls back to a full re-list
 * (every object, not only those created after the cursor), then events again.
 * The rolling window does not apply to events, which are read exactly from the cursor.
 */
export class StripeConnector implements Connector {
  readonly appType = 'stripe';
  readonly streams = stripeStreams;
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

  private now(): number {
    return this.options.now?.() ?? Date.now();
  }

  private async list<T>(url: URL, signal: AbortSignal | undefined) {
    const { body, headers } = await getJson<{ object: 'list'; has_more: boolean; data: T[] }>(
      'stripe',
      url,
      this.headers(),
      { ...this.options, ...(signal ? { signal } : {}) },
    );
    if (body.object !== 'list' || !Array.isArray(body.data))
      throw new ConnectorError('invalid_response', `stripe ${url.pathname} did not answer a list`, true);
    return { body, headers };
  }

  async check(signal?: AbortSignal): Promise<void> {
    const url = new URL('/v1/customers', this.baseUrl);
    url.searchParams.set('limit', '1');
    await this.list(url, signal);
  }

  async *read(stream: string, options: ReadOptions): AsyncIterable<StreamPage> {
    const path = paths[stream];
    if (!path) throw new ConnectorError('unknown_stream', `stripe has no stream ${stream}`, false);
    const cursor = options.cursor && /^\d+$/.test(options.cursor) ? Number(options.cursor) : undefined;
    if (cursor !== undefined && cursor * 1000 > this.now() - stripeEventRetentionMs)
      yield* this.readEvents(stream, cursor, options.signal);
    else yield* this.readObjects(stream, path, options);
  }

  /** Every object of the stream (bounded by the start date only), newest first. */
  private async *readObjects(stream: string, path: string, options: ReadOptions): AsyncIterable<StreamPage> {
    const start = options.startDate;
    let began: number | undefined;
    let startingAfter: string | undefined;
    for (;;) {
      const url = new URL(path, this.baseUrl);
      url.searchParams.set('limit', String(this.options.pageSize ?? 100));
      if (start) url.searchParams.set('created[gte]', String(Math.floor(start.getTime() / 1000)));
      // Without it canceled subscriptions are left out.
      if (stream === 'subscriptions') url.searchParams.set('status', 'all');
      if (startingAfter) url.searchParams.set('starting_after', startingAfter);
      const { body, headers } = await this.list<Record<string, unknown> & { id: string }>(
        url,
        options.signal,
      );
      began ??= answeredAt(headers, this.now()) - settleSeconds;
      const last = body.data[body.data.length - 1];
      // The cursor is saved only once the whole list is read: a cursor saved mid-list would
      // skip the older objects not read yet.
      const done = !body.has_more || !last;
      yield { records: body.data, cursor: done ? String(began) : options.cursor };
      if (done) return;
      startingAfter = last.id;
    }
  }

  private eventsUrl(
    stream: string,
    cursor: number,
    anchor?: { starting_after?: string; ending_before?: string },
  ) {
    const url = new URL('/v1/events', this.baseUrl);
    url.searchParams.set('limit', String(this.options.pageSize ?? 100));
    url.searchParams.set('created[gt]', String(cursor));
    for (const type of stripeEventTypes[stream]?.types ?? []) url.searchParams.append('types[]', type);
    if (anchor?.starting_after) url.searchParams.set('starting_after', anchor.starting_after);
    if (anchor?.ending_before) url.searchParams.set('ending_before', anchor.ending_before);
    return url;
  }

  /** The events after the cursor, oldest page first; see the class comment. */
  private async *readEvents(stream: string, cursor: number, signal?: AbortSignal): AsyncIterable<StreamPage> {
    const object = stripeEventTypes[stream]?.object;
    // The newest-first walk to the oldest page (nothing is loaded on the way).
    const first = await this.list<StripeEvent>(this.eventsUrl(stream, cursor), signal);
    let { body } = first;
    const settled = answeredAt(first.headers, this.now()) - settleSeconds;
    // Whether events newer than the page remain: on the walk's last page (whose `has_more`
    // speaks of older ones), whether the walk took more than one page; then `has_more` of
    // each `ending_before` page.
    let newer = false;
    while (body.has_more && body.data.length > 0) {
      const last = body.data[body.data.length - 1] as StripeEvent;
      ({ body } = await this.list<StripeEvent>(
        this.eventsUrl(stream, cursor, { starting_after: last.id }),
        signal,
      ));
      newer = true;
    }
    let saved = cursor;
    for (;;) {
      const events = [...body.data].reverse(); // oldest first
      const latest = new Map<string, Record<string, unknown>>();
      for (const event of events) {
        const record = event.data?.object;
        if (!record || typeof record.id !== 'string' || record.object !== object) continue;
        latest.delete(record.id); // so the map's order is that of each object's latest event
        const deleted = event.type === 'customer.deleted' || event.type === 'invoice.deleted';
        latest.set(record.id, deleted ? { ...record, deleted: true } : record);
      }
      const newest = body.data[0];
      if (newest) saved = Math.max(saved, newest.created - 1);
      const done = !newer || !newest;
      // At the end every event the API shows is loaded, and one created a minute before it
      // answered first is shown by then.
      if (done) saved = Math.max(saved, settled);
      yield { records: [...latest.values()], cursor: String(saved) };
      if (done) return;
      ({ body } = await this.list<StripeEvent>(
        this.eventsUrl(stream, cursor, { ending_before: newest.id }),
        signal,
      ));
      newer = body.has_more;
    }
  }
}
