// The violations API's answer (docs/tracking-plans.md, "Violations over time").

/** What a group of counts is keyed by. */
export type ViolationGroupBy = 'event' | 'code' | 'path' | 'version' | 'writeKey';

export type ViolationGranularityView = 'minute' | 'hour';

/** One violation as ingestion kept it, with the key it was counted under. */
export interface ViolationSampleView {
  messageId: string | null;
  /** When ingestion received the event (ISO 8601). */
  receivedAt: string;
  /** The violation's message, e.g. `/properties/subtotal is required`. */
  message: string;
  code: string;
  /** JSON Pointer into the event. */
  path: string;
  /** The plan version the event was held to; null when the plan could not be read. */
  version: number | null;
  writeKeyId: string;
  /** The event as received, cut at 4 KiB of JSON. */
  event: { [member: string]: unknown };
}

/** The counts of one group: the members its `groupBy` names are set, the others absent. */
export interface ViolationGroupView {
  /** With `event`: the event's type. */
  eventType?: string;
  /** With `event`: track: the event; page and screen: the name; other types: null. */
  eventName?: string | null;
  /** With `code`. */
  code?: string;
  /** With `path`: a JSON Pointer into the event. */
  path?: string;
  /** With `version`: null when the plan could not be read. */
  version?: number | null;
  /** With `writeKey`. */
  writeKeyId?: string;
  /** @isInt */
  total: number;
  /** The count in each bucket, zeros included, in the order of the answer's `buckets`. */
  series: number[];
  /** The newest samples of the group's keys, newest first, at most `samples`. */
  samples: ViolationSampleView[];
}

export interface PlanViolationsView {
  planId: string;
  granularity: ViolationGranularityView;
  groupBy: ViolationGroupBy[];
  /** The window asked for (ISO 8601), `until` exclusive. */
  since: string;
  until: string;
  /** Each bucket's start (ISO 8601), oldest first: the first is `since` rounded down to the bucket. */
  buckets: string[];
  /** @isInt */
  total: number;
  /**
   * The account's counts past a bucket's cap of 1,000 distinct keys in the window: they are not
   * in any group, and may be of any of the account's plans.
   * @isInt
   */
  overflow: number;
  /** By total, largest first; at most 200. */
  groups: ViolationGroupView[];
  /**
   * Groups past the 200 answered (the smallest).
   * @isInt
   */
  groupsLeftOff: number;
}

export interface PlanViolationsAnswer {
  data: PlanViolationsView;
}
