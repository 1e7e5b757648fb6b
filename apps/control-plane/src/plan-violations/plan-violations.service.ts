import { AppError } from '@pipeline/errors';
import {
  bucketMs,
  maxBuckets,
  readViolationBuckets,
  readViolationSamples,
  violationField,
  type RedisClient,
  type ViolationBucket,
  type ViolationGranularity,
  type ViolationSample,
} from '@pipeline/redis';
import { invalidField } from '../http/api-errors';
import type { TrackingPlanService } from '../tracking-plans/tracking-plan.service';
import {
  groupViolations,
  newestSamples,
  violationGroupBys,
  type ViolationFilters,
} from './plan-violations-grouping';
import type { PlanViolationsView, ViolationGroupBy, ViolationSampleView } from './plan-violations.dto';

export const violationsUnavailable = (cause?: unknown) => {
  const error = new AppError(
    503,
    'violations_unavailable',
    'Violation counts need Redis (REDIS_URL), which is not available',
  );
  if (cause !== undefined) error.cause = cause;
  return error;
};

const DAY_MS = 86_400_000;
/** The longest window of each granularity: a day of minutes, 32 days of hours (their TTLs). */
export const maxSpanMs: Record<ViolationGranularity, number> = { minute: DAY_MS, hour: 32 * DAY_MS };
export const MAX_GROUPS = 200;
export const MAX_SAMPLES = 5;
const DEFAULT_SAMPLES = 3;
const DEFAULT_GROUP_BY: ViolationGroupBy[] = ['event', 'code', 'path'];

/** The query as the controller receives it, unchecked. */
export interface PlanViolationsQuery {
  since?: string;
  until?: string;
  granularity?: string;
  groupBy?: string;
  writeKeyId?: string;
  event?: string;
  code?: string;
  version?: number;
  samples?: number;
}

const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/;

function instantOf(name: 'since' | 'until', raw: string | undefined, fallback: number): number {
  if (raw === undefined) return fallback;
  const at = ISO_INSTANT.test(raw) ? Date.parse(raw) : Number.NaN;
  if (Number.isNaN(at))
    throw invalidField(`query.${name}`, 'must be an ISO 8601 time with a zone, e.g. 2026-11-29T10:00:00Z');
  return at;
}

function groupByOf(raw: string | undefined): ViolationGroupBy[] {
  if (raw === undefined) return DEFAULT_GROUP_BY;
  const parts = raw.split(',').map((part) => part.trim());
  const unknown = parts.filter((part) => !(violationGroupBys as readonly string[]).includes(part));
  if (parts.length === 0 || unknown.length > 0)
    throw invalidField('query.groupBy', `must be a comma list of ${violationGroupBys.join(', ')}`);
  return [...new Set(parts as ViolationGroupBy[])];
}

/** The checked query: 400 validation_failed names the first value that is not valid. */
export function checkViolationsQuery(query: PlanViolationsQuery, now: number) {
  const until = instantOf('until', query.until, now);
  const since = instantOf('since', query.since, until - DAY_MS);
  if (since >= until) throw invalidField('query.since', 'must be before until');
  const span = until - since;
  if (query.granularity !== undefined && query.granularity !== 'minute' && query.granularity !== 'hour')
    throw invalidField('query.granularity', 'must be minute or hour');
  const granularity: ViolationGranularity =
    (query.granularity as ViolationGranularity | undefined) ?? (span <= maxSpanMs.minute ? 'minute' : 'hour');
  if (span > maxSpanMs[granularity])
    throw invalidField(
      'query.granularity',
      granularity === 'minute' ? 'minute covers at most 24 hours: use hour' : 'hour covers at most 32 days',
    );
  const samples = query.samples ?? DEFAULT_SAMPLES;
  if (!Number.isInteger(samples) || samples < 0 || samples > MAX_SAMPLES)
    throw invalidField('query.samples', `must be a whole number from 0 to ${MAX_SAMPLES}`);
  if (query.version !== undefined && (!Number.isInteger(query.version) || query.version < 1))
    throw invalidField('query.version', 'must be an integer of 1 or more');
  const filters: ViolationFilters = {
    ...(query.writeKeyId !== undefined ? { writeKeyId: query.writeKeyId } : {}),
    ...(query.event !== undefined ? { event: query.event } : {}),
    ...(query.code !== undefined ? { code: query.code } : {}),
    ...(query.version !== undefined ? { version: query.version } : {}),
  };
  return { since, until, granularity, groupBy: groupByOf(query.groupBy), samples, filters };
}

/**
 * A plan's violations over time (docs/tracking-plans.md, "Violations over time"), read from the
 * counts ingestion keeps in Redis. The plan must be the caller's account's (404 otherwise); the
 * counts are read from the account's own keys only. Without Redis, or when it fails, 503
 * `violations_unavailable`: the counts are for seeing, the warehouse's plan_violations is the record.
 */
export class PlanViolationsService {
  constructor(
    private readonly plans: TrackingPlanService,
    /** Null: REDIS_URL unset. The client without a key prefix: ingestion writes the keys. */
    private readonly redis: RedisClient | null,
    private readonly now: () => number = Date.now,
  ) {}

  async violations(
    accountId: string,
    planId: string,
    query: PlanViolationsQuery,
  ): Promise<PlanViolationsView> {
    const checked = checkViolationsQuery(query, this.now());
    const redis = this.redis;
    if (!redis) throw violationsUnavailable();
    const plan = await this.plans.get(accountId, planId);
    const { since, until, granularity, groupBy, filters } = checked;
    const size = bucketMs[granularity];
    // Whole buckets: the one `since` falls in, unless that makes one more than a read may span.
    let from = Math.floor(since / size) * size;
    if (Math.ceil((until - from) / size) > maxBuckets[granularity]) from += size;
    let buckets: ViolationBucket[];
    try {
      buckets = await readViolationBuckets(redis, accountId, granularity, from, until);
    } catch (error) {
      throw violationsUnavailable(error);
    }
    const grouped = groupViolations(buckets, plan.id, groupBy, filters, MAX_GROUPS);
    const keys = grouped.groups.flatMap((group) => group.keys);
    let found = new Map<string, ViolationSample[]>();
    if (checked.samples > 0 && keys.length > 0) {
      try {
        found = await readViolationSamples(redis, accountId, keys, checked.samples);
      } catch (error) {
        throw violationsUnavailable(error);
      }
    }
    return {
      planId: plan.id,
      granularity,
      groupBy,
      since: new Date(since).toISOString(),
      until: new Date(until).toISOString(),
      buckets: buckets.map((bucket) => new Date(bucket.start).toISOString()),
      total: grouped.total,
      overflow: grouped.overflow,
      groups: grouped.groups.map(({ values, keys: groupKeys, total, series }) => ({
        ...values,
        total,
        series,
        samples: newestSamples(
          groupKeys.map((key) =>
            (found.get(violationField(key)) ?? []).map((sample): ViolationSampleView => ({
              messageId: sample.messageId,
              receivedAt: sample.receivedAt,
              message: sample.message,
              code: key.code,
              path: key.path,
              version: key.version,
              writeKeyId: key.writeKeyId,
              event: sample.payload,
            })),
          ),
          checked.samples,
        ),
      })),
      groupsLeftOff: grouped.groupsLeftOff,
    };
  }
}
