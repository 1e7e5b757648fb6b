import type { EventContext, TrackingEvent } from '@pipeline/events';
import {
  lastTouch,
  parseAttribution,
  touchFromQuery,
  type Attribution,
  type Parameters,
} from './attribution';
import type { SdkConfig } from './config';
import { mergeConsent, parseConsent, type Consent } from './consent';
import type { DeliveryState } from './delivery';
import { inTimeRange } from './event-content';
import { buildEvent, type Call } from './event-builder';
import { library, limits, type Properties } from './library';
import type { Log } from './log';
import { parseSession, touchSession } from './session';
import { safeGet, safeSet, storageKeys, type KeyValueStore } from './storage';

/** Per-call options, as in Segment's API. */
export interface CallOptions {
  /** When the event happened (a Date or an ISO 8601 string); default now. */
  timestamp?: Date | string;
  /** Keys merged over the SDK's context (docs/sdk.md#what-every-event-carries; callers may add their own). */
  context?: Record<string, unknown>;
}

export type Callback = () => void;
export type Context = EventContext & Record<string, unknown>;

/** What the page tells about itself, read at each event. */
export interface Environment {
  /** The context every event carries: page, screen, browser, os, device, language, ... */
  context(): Context;
  /** The current URL's query string, for campaign parameters and click ids. */
  query(): string;
}

export interface EventSink {
  enqueue(event: TrackingEvent): void;
  flush(): Promise<void>;
  state(): DeliveryState;
}

export interface Dependencies {
  config: SdkConfig;
  /** Where ids, session, attribution and consent are kept. */
  store: KeyValueStore;
  storeKind: 'localStorage' | 'cookie' | 'memory';
  sink: EventSink;
  environment: Environment;
  now(): number;
  uuid(): string;
  log: Log;
}

export interface DebugState {
  version: string;
  writeKey: string | null;
  host: string | null;
  anonymousId: string;
  userId: string | null;
  sessionId: string | null;
  consent: Consent;
  campaign: Parameters | null;
  clickId: Parameters | null;
  storage: Dependencies['storeKind'];
  settings: { batchSize: number; flushIntervalMs: number };
  queue: DeliveryState;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  !!value && typeof value === 'object' && !Array.isArray(value) && !(value instanceof Date);

/** Segment's calls may end with a callback; it is taken off the arguments here. */
function splitCallback(args: unknown[]): [unknown[], Callback | null] {
  const last = args[args.length - 1];
  return typeof last === 'function' ? [args.slice(0, -1), last as Callback] : [args, null];
}

/**
 * `window.analytics` once the SDK has loaded: the calls of Segment's analytics.js and
 * RudderStack's SDK (track, page, identify, group, alias, reset), consent, and the ids kept
 * across page loads. Every call is guarded: a misuse logs an error and never throws into the
 * site's code.
 */
export class Analytics {
  readonly version = library.version;
  /** Tells the snippet and a second copy of the SDK that this one is in charge. */
  readonly initialized = true;
  readonly invoked = true;
  private anonymousId: string;
  private userId: string | null;
  private consent: Consent | null;
  private attribution: Attribution;
  private replayTime: number | null = null;
  private markReady: () => void = () => undefined;
  private readonly whenReady = new Promise<void>((resolve) => {
    this.markReady = resolve;
  });

  constructor(private readonly deps: Dependencies) {
    const stored = safeGet(deps.store, storageKeys.anonymousId);
    this.anonymousId = stored && stored.length <= limits.maxIdLength ? stored : this.newAnonymousId();
    this.userId = safeGet(deps.store, storageKeys.userId);
    this.consent = parseConsent(safeGet(deps.store, storageKeys.consent)) ?? deps.config.defaultConsent;
    this.attribution = this.touch(parseAttribution(safeGet(deps.store, storageKeys.attribution)));
  }

  track(event: string, properties?: Properties, options?: CallOptions, callback?: Callback): void;
  track(...input: unknown[]): void {
    this.guard('track', input, (args) => ({
      call: { type: 'track', event: args[0], properties: args[1] },
      options: args[2],
    }));
  }

  /** `page()`, `page(name, properties?)`, `page(properties)`, or Segment's `page(category, name, properties?)`. */
  page(name?: string | Properties, properties?: Properties, options?: CallOptions, callback?: Callback): void;
  page(
    category: string,
    name: string,
    properties?: Properties,
    options?: CallOptions,
    callback?: Callback,
  ): void;
  page(...input: unknown[]): void {
    this.guard('page', input, (args) => {
      // A client-side navigation may bring new campaign parameters.
      this.attribution = this.touch(this.attribution);
      if (typeof args[0] === 'string' && typeof args[1] === 'string') {
        return {
          call: { type: 'page', category: args[0], name: args[1], properties: args[2] },
          options: args[3],
        };
      }
      if (isObject(args[0])) return { call: { type: 'page', properties: args[0] }, options: args[1] };
      return { call: { type: 'page', name: args[0], properties: args[1] }, options: args[2] };
    });
  }

  /** `identify(userId, traits?)`, or `identify(traits)` for the user already identified. */
  identify(
    userId?: string | number | null,
    traits?: Properties,
    options?: CallOptions,
    callback?: Callback,
  ): void;
  identify(traits: Properties, options?: CallOptions, callback?: Callback): void;
  identify(...input: unknown[]): void {
    this.guard('identify', input, (args) => {
      const [userId, traits, options] = isObject(args[0]) ? [null, args[0], args[1]] : args;
      const call: Call = { type: 'identify', userId: userId ?? this.userId, traits };
      return { call, options };
    });
  }

  group(groupId: string | number, traits?: Properties, options?: CallOptions, callback?: Callback): void;
  group(...input: unknown[]): void {
    this.guard('group', input, (args) => ({
      call: { type: 'group', groupId: args[0], traits: args[1] },
      options: args[2],
    }));
  }

  /** Links `userId` to `previousId`, by default the current user id or else the anonymous id. */
  alias(
    userId: string | number,
    previousId?: string | number,
    options?: CallOptions,
    callback?: Callback,
  ): void;
  alias(...input: unknown[]): void {
    this.guard('alias', input, (args) => {
      const [previousId, options] = isObject(args[1]) ? [undefined, args[1]] : [args[1], args[2]];
      const call: Call = {
        type: 'alias',
        userId: args[0],
        previousId: previousId ?? this.userId ?? this.anonymousId,
      };
      return { call, options };
    });
  }

  /**
   * Forgets the visitor (a logout on a shared device): user id, anonymous id, session and
   * attribution. Consent stays, as it belongs to the browser; queued events are still sent.
   */
  reset(): void {
    this.userId = null;
    this.anonymousId = this.newAnonymousId();
    this.attribution = {};
    for (const key of [storageKeys.userId, storageKeys.session, storageKeys.attribution]) {
      safeSet(this.deps.store, key, null);
    }
  }

  /** Sends what is queued now; resolves when those requests have ended (a retry may follow). */
  flush(): Promise<void> {
    return this.deps.sink.flush().catch((error: unknown) => this.deps.log.error('flush failed', error));
  }

  /**
   * Records consent groups, e.g. `{ analytics: true, marketing: false }`, merged over what was
   * given before and kept across page loads. Each request carries the consent in force when it
   * is sent; events are not withheld, the host filters destinations by it.
   */
  setConsent(update: Consent): Consent {
    const { consent, ignored } = mergeConsent(this.consent ?? {}, update);
    if (ignored.length) this.deps.log.error(`setConsent takes booleans only; ignored: ${ignored.join(', ')}`);
    this.consent = consent;
    safeSet(this.deps.store, storageKeys.consent, JSON.stringify(consent));
    return { ...consent };
  }

  getConsent(): Consent {
    return { ...this.consent };
  }

  /** For the console: everything the SDK holds. */
  debugState(): DebugState {
    const { config } = this.deps;
    return {
      version: library.version,
      writeKey: config.writeKey,
      host: config.host,
      anonymousId: this.anonymousId,
      userId: this.userId,
      sessionId: parseSession(safeGet(this.deps.store, storageKeys.session))?.id ?? null,
      consent: this.getConsent(),
      campaign: this.attribution.campaign?.values ?? null,
      clickId: this.attribution.clickId?.values ?? null,
      storage: this.deps.storeKind,
      settings: { batchSize: config.batchSize, flushIntervalMs: config.flushIntervalMs },
      queue: this.deps.sink.state(),
    };
  }

  /** Resolves once the SDK has loaded and replayed the calls made before; runs `callback` then. */
  ready(callback?: Callback): Promise<void> {
    if (typeof callback === 'function') {
      void this.whenReady.then(() => {
        try {
          callback();
        } catch (error) {
          this.deps.log.error('a ready callback threw', error);
        }
      });
    }
    return this.whenReady;
  }

  /** The consent stamped on requests when they are sent. */
  consentForSending(): Consent | null {
    return this.consent;
  }

  /**
   * Replays one call the snippet queued before the SDK loaded, with the time the stub saw it,
   * so a page view queued during a slow load keeps its real time.
   */
  replay(method: string, args: unknown[], calledAt: number | undefined): void {
    const target = (this as unknown as Record<string, unknown>)[method];
    if (typeof target !== 'function' || !publicMethods.has(method)) {
      this.deps.log.warn(`the snippet queued an unknown call: ${method}`);
      return;
    }
    this.replayTime = typeof calledAt === 'number' ? calledAt : null;
    try {
      (target as (...a: unknown[]) => unknown).apply(this, args);
    } finally {
      this.replayTime = null;
    }
  }

  /** Called by the loader once the stub's calls were replayed. */
  loaded(): void {
    this.markReady();
  }

  private guard(
    method: string,
    input: unknown[],
    parse: (args: unknown[]) => { call: Call; options: unknown },
  ): void {
    try {
      const [args, callback] = splitCallback(input);
      const { call, options } = parse(args);
      this.record(call, isObject(options) ? (options as CallOptions) : {});
      if (callback) setTimeout(callback, 0);
    } catch (error) {
      this.deps.log.error(`${method} failed`, error);
    }
  }

  private record(call: Call, options: CallOptions): void {
    const now = this.deps.now();
    if (call.type === 'identify' && (typeof call.userId === 'string' || typeof call.userId === 'number')) {
      // Set before the event is built, so this identify and every later event carry the id.
      const id = String(call.userId);
      if (id && id.length <= limits.maxIdLength) {
        this.userId = id;
        safeSet(this.deps.store, storageKeys.userId, id);
      }
    }
    const session = touchSession(parseSession(safeGet(this.deps.store, storageKeys.session)), now);
    safeSet(this.deps.store, storageKeys.session, JSON.stringify(session));
    const { campaign, clickId } = this.attribution;
    const context: Context = {
      ...this.deps.environment.context(),
      session: { id: session.id },
      ...(campaign ? { campaign: campaign.values } : {}),
      ...(clickId ? { clickId: clickId.values } : {}),
      ...options.context,
    };
    const built = buildEvent(call, {
      messageId: this.deps.uuid(),
      timestamp: this.timestampOf(options.timestamp, now),
      anonymousId: this.anonymousId,
      userId: this.userId,
      sessionId: session.id,
      context,
    });
    if (built.ok) this.deps.sink.enqueue(built.event);
    else this.deps.log.error(`${built.error}; the event is not sent`);
  }

  private timestampOf(given: CallOptions['timestamp'], now: number): string {
    const time =
      given instanceof Date ? given.getTime() : typeof given === 'string' ? Date.parse(given) : NaN;
    // A time the server would refuse (outside the years 0001-9999) is replaced like an unreadable one.
    return new Date(inTimeRange(time) ? time : (this.replayTime ?? now)).toISOString();
  }

  /** Reads the current URL's campaign and click ids into the stored last touch. */
  private touch(stored: Attribution | null): Attribution {
    const next = lastTouch(stored, touchFromQuery(this.deps.environment.query()), this.deps.now());
    safeSet(this.deps.store, storageKeys.attribution, JSON.stringify(next));
    return next;
  }

  private newAnonymousId(): string {
    const id = this.deps.uuid();
    safeSet(this.deps.store, storageKeys.anonymousId, id);
    return id;
  }
}

/**
 * The public calls, the only ones a queued call may name: the snippet's stub queues some of
 * them (apps/ingestion/src/sdk/snippet.ts), a site's own stub may queue any.
 */
const publicMethods: ReadonlySet<string> = new Set([
  'track',
  'page',
  'identify',
  'group',
  'alias',
  'reset',
  'flush',
  'ready',
  'setConsent',
  'getConsent',
  'debugState',
]);
