import { createHash } from 'node:crypto';
import type { ViolationBucket, ViolationKey, ViolationSample } from '@pipeline/redis';

// What one window of a plan's counts becomes (docs/tracking-plans.md, "Alerts"): one Segment
// `Violation Generated` track event per (event type, event name, code, path), summed over the
// plan's versions and write keys. Pure: tested against hand-made buckets.

/** The alerts one window may send: the largest counts, as many as the webhook destination puts in one request. */
export const MAX_ALERTS_PER_WINDOW = 100;

export interface WindowAlert {
  eventType: string;
  eventName: string | null;
  code: string;
  path: string;
  count: number;
  versions: (number | null)[];
  writeKeyIds: string[];
  /** The key of the largest count, whose newest sample the alert carries. */
  sampleKey: ViolationKey;
}

export interface WindowAlerts {
  alerts: WindowAlert[];
  /** Keys past MAX_ALERTS_PER_WINDOW, not sent, and the violations they counted. */
  omittedKeys: number;
  omittedCount: number;
}

const byVersion = (a: number | null, b: number | null) => (a ?? -1) - (b ?? -1);

/** The plan's counts of the window's minute buckets, one alert per key, the largest first. */
export function windowAlerts(
  buckets: readonly ViolationBucket[],
  planId: string,
  cap = MAX_ALERTS_PER_WINDOW,
) {
  const found = new Map<
    string,
    WindowAlert & { sampleCount: number; versionSet: Set<number | null>; keySet: Set<string> }
  >();
  const sampleCounts = new Map<string, Map<string, number>>();
  for (const bucket of buckets) {
    for (const { key, count } of bucket.counts) {
      if (key.planId !== planId) continue;
      const id = JSON.stringify([key.eventType, key.eventName, key.code, key.path]);
      let alert = found.get(id);
      if (!alert) {
        alert = {
          eventType: key.eventType,
          eventName: key.eventName,
          code: key.code,
          path: key.path,
          count: 0,
          versions: [],
          writeKeyIds: [],
          sampleKey: key,
          sampleCount: 0,
          versionSet: new Set(),
          keySet: new Set(),
        };
        found.set(id, alert);
        sampleCounts.set(id, new Map());
      }
      alert.count += count;
      alert.versionSet.add(key.version);
      alert.keySet.add(key.writeKeyId);
      // The full key (version, write key) counted most in the window carries the sample.
      const perKey = sampleCounts.get(id) ?? new Map<string, number>();
      sampleCounts.set(id, perKey);
      const full = JSON.stringify([key.version, key.writeKeyId]);
      const total = (perKey.get(full) ?? 0) + count;
      perKey.set(full, total);
      if (total > alert.sampleCount) {
        alert.sampleCount = total;
        alert.sampleKey = key;
      }
    }
  }
  const sorted = [...found.values()].sort(
    (a, b) =>
      b.count - a.count ||
      a.eventType.localeCompare(b.eventType) ||
      (a.eventName ?? '').localeCompare(b.eventName ?? '') ||
      a.code.localeCompare(b.code) ||
      a.path.localeCompare(b.path),
  );
  const kept = sorted.slice(0, cap);
  const omitted = sorted.slice(cap);
  const result: WindowAlerts = {
    alerts: kept.map(({ sampleCount: _c, versionSet, keySet, ...alert }) => ({
      ...alert,
      versions: [...versionSet].sort(byVersion),
      writeKeyIds: [...keySet].sort(),
    })),
    omittedKeys: omitted.length,
    omittedCount: omitted.reduce((sum, alert) => sum + alert.count, 0),
  };
  return result;
}

export interface AlertWindow {
  planId: string;
  planName: string | null;
  start: number;
  end: number;
}

/** The same for every attempt at the same plan, window and key: receivers deduplicate on it. */
export function alertMessageId(
  window: AlertWindow,
  alert: Pick<WindowAlert, 'eventType' | 'eventName' | 'code' | 'path'>,
) {
  return createHash('sha256')
    .update(
      JSON.stringify([
        window.planId,
        window.start,
        window.end,
        alert.eventType,
        alert.eventName,
        alert.code,
        alert.path,
      ]),
    )
    .digest('hex')
    .slice(0, 32);
}

export interface ViolationGeneratedEvent {
  type: 'track';
  event: 'Violation Generated';
  messageId: string;
  timestamp: string;
  properties: {
    planId: string;
    planName?: string;
    eventType: string;
    eventName: string | null;
    violationCode: string;
    path: string;
    count: number;
    windowStart: string;
    windowEnd: string;
    versions: (number | null)[];
    writeKeyIds: string[];
    /** Keys of the window not sent (past the cap), the same on each of the window's alerts. */
    omittedKeys: number;
    omittedCount: number;
    /** The newest sample of the key counted most: the event itself is not sent. */
    sample?: { messageId: string | null; receivedAt: string; message: string };
  };
}

export function violationGenerated(
  window: AlertWindow,
  found: WindowAlerts,
  alert: WindowAlert,
  sample: ViolationSample | undefined,
): ViolationGeneratedEvent {
  return {
    type: 'track',
    event: 'Violation Generated',
    messageId: alertMessageId(window, alert),
    timestamp: new Date(window.end).toISOString(),
    properties: {
      planId: window.planId,
      ...(window.planName === null ? {} : { planName: window.planName }),
      eventType: alert.eventType,
      eventName: alert.eventName,
      violationCode: alert.code,
      path: alert.path,
      count: alert.count,
      windowStart: new Date(window.start).toISOString(),
      windowEnd: new Date(window.end).toISOString(),
      versions: alert.versions,
      writeKeyIds: alert.writeKeyIds,
      omittedKeys: found.omittedKeys,
      omittedCount: found.omittedCount,
      ...(sample
        ? { sample: { messageId: sample.messageId, receivedAt: sample.receivedAt, message: sample.message } }
        : {}),
    },
  };
}
