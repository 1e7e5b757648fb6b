import { mergeConsent, type Consent } from './consent';
import { limits } from './library';

export interface SdkConfig {
  writeKey: string | null;
  /** The tracking host's origin, e.g. `https://t.example.com`; events go to `<host>/collect`. */
  host: string | null;
  batchSize: number;
  flushIntervalMs: number;
  /** Consent assumed until `setConsent` is called: what the site decides before its banner answers. */
  defaultConsent: Consent | null;
}

export const defaults = { batchSize: 20, flushIntervalMs: 5000 } as const;

/** The settings the snippet's stub carries (`a.writeKey=...`), or a site adds beside them. */
export interface StubSettings {
  writeKey?: unknown;
  host?: unknown;
  apiHost?: unknown;
  batchSize?: unknown;
  flushInterval?: unknown;
  consent?: unknown;
}

function origin(value: unknown): string | null {
  if (typeof value !== 'string' || !value) return null;
  try {
    const url = new URL(value);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.origin : null;
  } catch {
    return null;
  }
}

function integerIn(value: unknown, min: number, max: number, fallback: number, name: string, warn: Warn) {
  if (value === undefined || value === null) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    warn(`${name} must be a number; using ${fallback}`);
    return fallback;
  }
  const clamped = Math.min(max, Math.max(min, Math.round(value)));
  if (clamped !== value) warn(`${name} must be an integer from ${min} to ${max}; using ${clamped}`);
  return clamped;
}

type Warn = (message: string) => void;

/**
 * Reads the stub's settings. `apiHost` (RudderStack's and Segment's name) wins over `host`
 * (the snippet's); without either, the host the SDK itself was loaded from is used.
 */
export function resolveConfig(settings: StubSettings, scriptSrc: string | null, warn: Warn): SdkConfig {
  let writeKey = typeof settings.writeKey === 'string' && settings.writeKey ? settings.writeKey : null;
  if (!writeKey) warn('no writeKey in the snippet: events are kept but not sent');
  else if (writeKey === 'YOUR_WRITE_KEY') {
    warn('the snippet still has the placeholder YOUR_WRITE_KEY: events are kept but not sent');
    writeKey = null;
  }
  const explicit = settings.apiHost ?? settings.host;
  const host = origin(explicit) ?? origin(scriptSrc);
  if (explicit !== undefined && !origin(explicit)) warn('host must be an http(s) URL');
  if (!host) warn('no tracking host: events are kept but not sent');
  let defaultConsent: Consent | null = null;
  if (settings.consent !== undefined) {
    const { consent, ignored } = mergeConsent({}, settings.consent);
    if (ignored.length) warn(`consent values must be booleans; ignored: ${ignored.join(', ')}`);
    defaultConsent = consent;
  }
  return {
    writeKey,
    host,
    batchSize: integerIn(settings.batchSize, 1, limits.maxBatchSize, defaults.batchSize, 'batchSize', warn),
    flushIntervalMs: integerIn(
      settings.flushInterval,
      100,
      60 * 60 * 1000,
      defaults.flushIntervalMs,
      'flushInterval',
      warn,
    ),
    defaultConsent,
  };
}
