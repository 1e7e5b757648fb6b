import { Analytics, type Context } from './analytics';
import { resolveConfig, type StubSettings } from './config';
import type { Consent } from './consent';
import { Delivery } from './delivery';
import { EventQueue } from './event-queue';
import { library, limits } from './library';
import { consoleLog } from './log';
import { cookieStore, memoryStore, usableLocalStorage } from './storage';
import { browserTransport } from './transport';
import { parseUserAgent } from './user-agent';
import { uuidv4 } from './uuid';

// The loader: turns the snippet's stub (an array of queued calls with the settings as
// properties) into the SDK, replays the calls in order, and wires the page's lifecycle events.

/** How often a page tells other pages its queue is still looked after. */
const HEARTBEAT_MS = 10_000;

type Stub = unknown[] & StubSettings & { initialized?: unknown };
type QueuedCall = unknown[] & { t?: number };

declare global {
  interface Window {
    analytics?: unknown;
  }
}

const text = (value: string) => value.slice(0, limits.maxContextText);

function pageContext() {
  const { href, hash, pathname, search } = location;
  return {
    url: text(hash ? href.slice(0, -hash.length) : href),
    path: text(pathname),
    title: text(document.title),
    referrer: text(document.referrer),
    search: text(search),
  };
}

function timezone(): { timezone?: string } {
  try {
    return { timezone: Intl.DateTimeFormat().resolvedOptions().timeZone };
  } catch {
    return {};
  }
}

function install(): void {
  const existing = window.analytics as Stub | undefined;
  // A second copy of the SDK on the page leaves the first in charge.
  if (existing && existing.initialized) return;
  const stub: Stub = Array.isArray(existing) ? existing : ([] as unknown[] as Stub);
  const log = consoleLog;
  const config = resolveConfig(
    stub,
    (document.currentScript as HTMLScriptElement | null)?.src ?? null,
    log.warn,
  );

  const local = usableLocalStorage(window);
  const cookies = local ? null : cookieStore(document, location.protocol === 'https:');
  const store = local ?? cookies ?? memoryStore();
  const storeKind = local ? 'localStorage' : cookies ? 'cookie' : 'memory';

  const ua = navigator.userAgent;
  const { browser, os, device } = parseUserAgent(ua, navigator.maxTouchPoints || 0);
  const locale = navigator.language || undefined;
  const fixedContext: Context = {
    source: 'web',
    library: { ...library },
    ...(browser ? { browser } : {}),
    ...(os ? { os } : {}),
    device,
    ...(locale ? { locale, language: locale.split('-')[0] } : {}),
    ...timezone(),
    userAgent: text(ua),
  };

  const now = () => Date.now();
  const queue = new EventQueue(local ?? memoryStore(), uuidv4(), log);
  queue.heartbeat(now());
  const delivery: Delivery = new Delivery(
    queue,
    {
      url: config.host ? `${config.host}/collect` : null,
      writeKey: config.writeKey,
      batchSize: config.batchSize,
      flushIntervalMs: config.flushIntervalMs,
    },
    browserTransport,
    {
      now,
      random: Math.random,
      later(run, ms) {
        const id = setTimeout(run, ms);
        return () => clearTimeout(id);
      },
    },
    (): Consent | null => analytics.consentForSending(),
    log,
  );
  const analytics: Analytics = new Analytics({
    config,
    store,
    storeKind,
    sink: delivery,
    environment: {
      context: () => ({
        ...fixedContext,
        page: pageContext(),
        screen: { width: Math.round(screen.width), height: Math.round(screen.height) },
      }),
      query: () => location.search,
    },
    now,
    uuid: () => uuidv4(),
    log,
  });

  // Events adopted from an earlier page are due now; the calls replayed below wait for a batch.
  delivery.resume();
  window.analytics = analytics;
  for (const queued of stub) {
    if (!Array.isArray(queued) || typeof queued[0] !== 'string') continue;
    const [method, ...args] = queued as QueuedCall;
    analytics.replay(method as string, args, (queued as QueuedCall).t);
  }
  analytics.loaded();

  setInterval(() => {
    // Events adopted from a tab that is gone are due now.
    if (queue.heartbeat(now()) > 0) delivery.resume();
  }, HEARTBEAT_MS);
  document.addEventListener('visibilitychange', () => {
    if (document.visibilityState === 'hidden') delivery.hide();
  });
  addEventListener('pagehide', () => {
    delivery.hide();
    queue.release();
  });
  addEventListener('pageshow', (event) => {
    if (event.persisted) {
      queue.reclaim(now());
      delivery.resume();
    }
  });
}

try {
  install();
} catch (error) {
  consoleLog.error('the SDK could not start', error);
}
