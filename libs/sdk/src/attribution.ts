import { limits } from './library';

/** Advertising click ids read from the landing URL (`context.clickId`, docs/sdk.md#what-every-event-carries). */
export const clickIdParameters = [
  'gclid',
  'gbraid',
  'wbraid',
  'dclid',
  'fbclid',
  'msclkid',
  'ttclid',
  'li_fat_id',
  'twclid',
  'sccid',
  'epik',
  'rdt_cid',
  'irclickid',
  'yclid',
] as const;

/** How long a campaign or click id is kept: the longest attribution window of the ad platforms. */
export const ATTRIBUTION_TTL_MS = 90 * 24 * 60 * 60 * 1000;

export type Parameters = Record<string, string>;

/** What one landing URL says: its `utm_*` parameters and its click ids. */
export interface Touch {
  campaign?: Parameters;
  clickId?: Parameters;
}

/** The last touch kept in storage, each part with the time it was seen. */
export interface Attribution {
  campaign?: { values: Parameters; at: number };
  clickId?: { values: Parameters; at: number };
}

const clickIds = new Set<string>(clickIdParameters);

/** Reads a URL's query string (`location.search`). Parameter names are matched case-insensitively. */
export function touchFromQuery(search: string): Touch {
  const touch: Touch = {};
  new URLSearchParams(search).forEach((raw, key) => {
    const name = key.toLowerCase();
    const value = raw.trim().slice(0, limits.maxContextText);
    if (!value) return;
    const part = name.startsWith('utm_') ? 'campaign' : clickIds.has(name) ? 'clickId' : null;
    if (part) touch[part] = { ...touch[part], [name]: value };
  });
  return touch;
}

/**
 * Last touch: a URL with any campaign parameter replaces the whole stored campaign (never a
 * mix of two visits), and likewise for click ids; the two are independent, as an ad click's id
 * stays valid for conversions after a later visit from an email. Parts older than the TTL go.
 */
export function lastTouch(stored: Attribution | null, touch: Touch, now: number): Attribution {
  const next: Attribution = {};
  for (const part of ['campaign', 'clickId'] as const) {
    const seen = touch[part];
    const kept = stored?.[part];
    if (seen) next[part] = { values: seen, at: now };
    else if (kept && now - kept.at < ATTRIBUTION_TTL_MS) next[part] = kept;
  }
  return next;
}

/** A stored value read back: anything malformed counts as nothing stored. */
export function parseAttribution(json: string | null): Attribution | null {
  try {
    const value: unknown = json ? JSON.parse(json) : null;
    if (!value || typeof value !== 'object') return null;
    const result: Attribution = {};
    for (const part of ['campaign', 'clickId'] as const) {
      const entry = (value as Record<string, unknown>)[part] as
        { values?: unknown; at?: unknown } | undefined;
      if (entry && typeof entry.at === 'number' && isStringRecord(entry.values)) {
        result[part] = { values: entry.values, at: entry.at };
      }
    }
    return result;
  } catch {
    return null;
  }
}

function isStringRecord(value: unknown): value is Parameters {
  return (
    !!value &&
    typeof value === 'object' &&
    !Array.isArray(value) &&
    Object.values(value).every((v) => typeof v === 'string')
  );
}
