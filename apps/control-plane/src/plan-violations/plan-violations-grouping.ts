import type { ViolationBucket, ViolationKey, ViolationSample } from '@pipeline/redis';
import type { ViolationGroupBy, ViolationGroupView } from './plan-violations.dto';

export const violationGroupBys: readonly ViolationGroupBy[] = [
  'event',
  'code',
  'path',
  'version',
  'writeKey',
];

export interface ViolationFilters {
  writeKeyId?: string;
  /** The event's name, or its type for an event without a name (identify, group, alias). */
  event?: string;
  code?: string;
  version?: number;
}

/** A group's values: the members its groupBy names. */
export type ViolationGroupValues = Omit<ViolationGroupView, 'total' | 'series' | 'samples'>;

export interface ViolationGroup {
  values: ViolationGroupValues;
  /** The keys counted in the group, for its samples. */
  keys: ViolationKey[];
  total: number;
  series: number[];
}

export interface GroupedViolations {
  groups: ViolationGroup[];
  groupsLeftOff: number;
  total: number;
  overflow: number;
}

function valuesOf(key: ViolationKey, groupBy: readonly ViolationGroupBy[]): ViolationGroupValues {
  const values: ViolationGroupValues = {};
  for (const by of groupBy) {
    if (by === 'event') {
      values.eventType = key.eventType;
      values.eventName = key.eventName;
    } else if (by === 'code') values.code = key.code;
    else if (by === 'path') values.path = key.path;
    else if (by === 'version') values.version = key.version;
    else values.writeKeyId = key.writeKeyId;
  }
  return values;
}

function matches(key: ViolationKey, planId: string, filters: ViolationFilters): boolean {
  if (key.planId !== planId) return false;
  if (filters.writeKeyId !== undefined && key.writeKeyId !== filters.writeKeyId) return false;
  if (filters.event !== undefined && (key.eventName ?? key.eventType) !== filters.event) return false;
  if (filters.code !== undefined && key.code !== filters.code) return false;
  if (filters.version !== undefined && key.version !== filters.version) return false;
  return true;
}

const compareText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/**
 * The plan's counts in `buckets` summed per group, a point per bucket; largest total first (ties
 * in the order of the groups' values, so an answer is the same for the same counts), the first
 * `maxGroups` kept. Other plans' keys are not counted; the buckets' overflow is, whole, as
 * it names no plan.
 */
export function groupViolations(
  buckets: readonly ViolationBucket[],
  planId: string,
  groupBy: readonly ViolationGroupBy[],
  filters: ViolationFilters,
  maxGroups: number,
): GroupedViolations {
  const byId = new Map<string, ViolationGroup & { keyIds: Set<string> }>();
  let total = 0;
  let overflow = 0;
  buckets.forEach((bucket, i) => {
    overflow += bucket.overflow;
    for (const { key, count } of bucket.counts) {
      if (!matches(key, planId, filters)) continue;
      const values = valuesOf(key, groupBy);
      const id = JSON.stringify(values);
      let group = byId.get(id);
      if (!group) {
        group = {
          values,
          keys: [],
          keyIds: new Set(),
          total: 0,
          series: new Array<number>(buckets.length).fill(0),
        };
        byId.set(id, group);
      }
      const keyId = JSON.stringify(key);
      if (!group.keyIds.has(keyId)) {
        group.keyIds.add(keyId);
        group.keys.push(key);
      }
      group.series[i] = (group.series[i] ?? 0) + count;
      group.total += count;
      total += count;
    }
  });
  const sorted = [...byId.entries()]
    .sort(([a, ga], [b, gb]) => gb.total - ga.total || compareText(a, b))
    .map(([, { keyIds: _keyIds, ...group }]) => group);
  return {
    groups: sorted.slice(0, maxGroups),
    groupsLeftOff: Math.max(0, sorted.length - maxGroups),
    total,
    overflow,
  };
}

/** The newest `limit` of several keys' sample lists (each newest first), newest first. */
export function newestSamples<S extends Pick<ViolationSample, 'receivedAt'>>(
  lists: readonly (readonly S[])[],
  limit: number,
): S[] {
  return (
    lists
      .flat()
      .map((sample, order) => {
        const at = Date.parse(sample.receivedAt);
        return { sample, order, at: Number.isNaN(at) ? -Infinity : at };
      })
      // A tie (two unreadable times: -Infinity - -Infinity is NaN) keeps the lists' order.
      .sort((a, b) => b.at - a.at || a.order - b.order)
      .slice(0, Math.max(0, limit))
      .map(({ sample }) => sample)
  );
}
