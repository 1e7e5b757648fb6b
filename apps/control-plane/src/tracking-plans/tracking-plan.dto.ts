import type { PlanPolicy, TrackingPlan } from '@pipeline/tracking-plans';

// The management API's tracking-plan bodies and answers (docs/tracking-plans.md, "Management
// API"). A submitted plan or policy is typed loosely here on purpose: checkPlan and checkPolicy
// judge it whole, answering every problem at once with a JSON Pointer (422), rather than tsoa
// stopping at the first member of the wrong shape.

/** A JSON Schema of the whole event (draft-07, or 2020-12 when its `$schema` says so). */
export type EventSchema = { [keyword: string]: unknown };

/** One rule of a plan (the library's PlanRule, restated for the API document). */
export interface PlanRuleView {
  type: 'track' | 'identify' | 'group' | 'page' | 'screen' | 'alias';
  /** track: the event name; page and screen: the page name (absent: every page). */
  name?: string;
  /** The rule's own version (Segment's `context.protocols.event_version`); 1 when absent. */
  version?: number;
  description?: string;
  schema: EventSchema;
}

/** A tracking plan document (the library's TrackingPlan, restated for the API document). */
export interface TrackingPlanDocument {
  /** Applies to every event. */
  common?: EventSchema;
  rules: PlanRuleView[];
}

// The restated shapes stay equal to the library's: a change there fails the build here.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const _sameDocument: Same<TrackingPlanDocument, TrackingPlan> = true;
void _sameDocument;

/**
 * A tracking plan document: `{ common?, rules: [{ type, name?, version?, description?, schema }] }`
 * (docs/tracking-plans.md, "The plan document"). Checked whole by checkPlan: 422
 * `invalid_tracking_plan` lists every problem.
 */
export type PlanDocumentInput = { [member: string]: unknown };

/**
 * @minLength 1
 * @maxLength 200
 */
export type PlanName = string;

/** @maxLength 2000 */
export type PlanDescription = string;

export interface CreateTrackingPlanBody {
  name: PlanName;
  description?: PlanDescription;
  /** The first draft; absent: a plan with no rules. */
  plan?: PlanDocumentInput;
}

export interface UpdateTrackingPlanBody {
  name?: PlanName;
  description?: PlanDescription;
}

export type ImportFormat = 'segment' | 'rudderstack';

export interface ImportTrackingPlanBody {
  /** `segment`: a Segment tracking plan's rules; `rudderstack`: a Rudder CLI project's YAML files. */
  format: ImportFormat;
  name: PlanName;
  description?: PlanDescription;
  /**
   * segment: the rules as Segment's Public API lists them (`{ rules }` or `{ data: { rules } }`),
   * as JSON or as a string of it. rudderstack: the YAML files' texts (a string is one file).
   */
  content: string | string[] | { [member: string]: unknown };
}

/** A plan as lists show it: without its draft. */
export interface TrackingPlanSummary {
  /** @format uuid */
  id: string;
  name: string;
  description: string;
  /** The newest published version; null before the first publish. */
  latestVersion: number | null;
  /** planHash of the draft. */
  draftHash: string;
  /** Whether the draft differs from the latest version (always true before the first publish). */
  draftChanged: boolean;
  /** Write keys that bind the plan. */
  boundWriteKeys: number;
  createdAt: string;
  updatedAt: string;
}

export interface TrackingPlanView extends TrackingPlanSummary {
  draft: TrackingPlanDocument;
}

export interface TrackingPlanAnswer {
  data: TrackingPlanView;
}

/** A published version without its document. */
export interface TrackingPlanVersionSummary {
  /** @format uuid */
  planId: string;
  version: number;
  /** sha256 (hex) of the version's canonical JSON (docs/tracking-plans.md, "Content hash"). */
  hash: string;
  publishedAt: string;
  /** The API key that published it; null once that key is deleted. */
  publishedByApiKeyId: string | null;
}

export interface TrackingPlanVersionView extends TrackingPlanVersionSummary {
  /** Exactly what was published: its canonical JSON hashes to `hash`. */
  plan: TrackingPlanDocument;
}

export interface TrackingPlanVersionAnswer {
  data: TrackingPlanVersionView;
}

/** One change between two versions (diffPlans). */
export interface PlanChangeView {
  /** The rule, or `{ type: "common" }` for the common schema. */
  rule: { type: string; name?: string; version?: number };
  /** JSON Pointer into the event; `/*` for every array item or unlisted property. */
  path: string;
  kind: 'breaking' | 'revision' | 'addition';
  /** A stable code, e.g. `required_added`, `type_widened`, `rule_added`. */
  change: string;
  message: string;
}

export interface TrackingPlanDiff {
  from: number;
  to: number | 'draft';
  /** The changes' count per kind. */
  counts: { breaking: number; revision: number; addition: number };
  changes: PlanChangeView[];
}

export interface TrackingPlanDiffAnswer {
  data: TrackingPlanDiff;
}

export interface SegmentRuleView {
  type: 'TRACK' | 'IDENTIFY' | 'GROUP' | 'PAGE' | 'SCREEN' | 'COMMON';
  key?: string;
  version: number;
  jsonSchema: { [keyword: string]: unknown };
}

/** Segment's rules, the body of its replaceRulesInTrackingPlan; our import reads it back. */
export interface SegmentExportAnswer {
  data: { rules: SegmentRuleView[] };
}

export type PolicyActionName = 'allow' | 'omit' | 'quarantine';

/** The action per violation class; a class left out is `allow`. */
export interface PolicyActionsView {
  unplanned_event?: PolicyActionName;
  unplanned_property?: PolicyActionName;
  missing_required?: PolicyActionName;
  wrong_value?: PolicyActionName;
  common_schema?: PolicyActionName;
}

export interface PlanPolicyView {
  actions: PolicyActionsView;
  /** Overrides by destination: `warehouse`, or one of the account's integration ids. */
  destinations?: { [destination: string]: PolicyActionsView };
}

const _samePolicy: Same<PlanPolicyView, PlanPolicy> = true;
void _samePolicy;

/**
 * A policy to bind: `{ actions: { <class>: <action> }, destinations?: { <destination>: { <class>:
 * <action> } } }` with the classes unplanned_event, unplanned_property, missing_required,
 * wrong_value and common_schema, the actions allow, omit (not for unplanned_event or
 * missing_required) and quarantine. Checked whole: 422 `invalid_policy` lists every problem.
 */
export type PlanPolicyInput = { [member: string]: unknown };

/**
 * @isInt
 * @minimum 1
 */
export type PinnedVersion = number;

export interface BindTrackingPlanBody {
  /** @format uuid */
  planId: string;
  /** `latest`: the newest published version, followed on each publish; a number: that version, fixed. */
  version: 'latest' | PinnedVersion;
  policy: PlanPolicyInput;
}

export interface TrackingPlanBindingView {
  writeKeyId: string;
  planId: string;
  binding: 'latest' | 'pinned';
  /** The version the key's events are held to now. */
  version: number;
  policy: PlanPolicyView;
  updatedAt: string;
}

export interface TrackingPlanBindingAnswer {
  data: TrackingPlanBindingView;
}

/** Internal: the version ingestion compiles (POST /internal/v1/tracking-plan-versions). */
export interface TrackingPlanVersionQuery {
  /**
   * @minLength 1
   * @maxLength 64
   */
  accountId: string;
  /**
   * @minLength 1
   * @maxLength 64
   */
  planId: string;
  /**
   * @isInt
   * @minimum 1
   */
  version: number;
}

export interface TrackingPlanVersionRecord {
  planId: string;
  version: number;
  hash: string;
  plan: TrackingPlanDocument;
}

/**
 * Days of traffic a plan is generated from or previewed against: the last N × 24 hours.
 * @isInt
 * @minimum 1
 * @maximum 90
 */
export type TrafficDays = number;

export interface GenerateTrackingPlanBody {
  name: PlanName;
  description?: PlanDescription;
  /** The last N days (1-90) of the account's warehouse; default 7. */
  days?: TrafficDays;
  /**
   * A member is required when present in at least this share of its event's sampled rows;
   * default 1.0 (always present).
   * @minimum 0.01
   * @maximum 1
   */
  requiredRatio?: number;
  /**
   * A string member with at most this many distinct values gets an `enum`; default 10, 0: none.
   * @isInt
   * @minimum 0
   * @maximum 50
   */
  maxEnumValues?: number;
}

/** A rule of the generated draft and what it was inferred from. */
export interface GeneratedRuleView {
  type: 'track' | 'page' | 'screen' | 'identify' | 'group';
  /** Absent for identify, group, and the rule of pages (or screens) sent without a name. */
  name?: string;
  /** Calls seen in the window. */
  observedCount: number;
  /** The latest calls whose members were read (at most 1,000 per name). */
  sampledCount: number;
  firstSeen: string;
  lastSeen: string;
}

export type ObservedJsonType = 'integer' | 'number' | 'string' | 'boolean' | 'object' | 'array' | 'null';

/** A member the draft does not type or plan as it was seen (docs/tracking-plans.md, "Plans from traffic"). */
export interface FlaggedPropertyView {
  type: GeneratedRuleView['type'];
  name?: string;
  /** JSON Pointer into the event (`~0` for `~`, `~1` for `/`). */
  path: string;
  /** `mixed_types` (left untyped), `unplannable_name` (`__proto__`: rule left open), `properties_capped` (rule left open). */
  reason: 'mixed_types' | 'unplannable_name' | 'properties_capped';
  /** Sampled rows per JSON type. */
  types: { [jsonType in ObservedJsonType]?: number };
}

export interface TrafficWindowView {
  days: number;
  /** Calls whose time (timestamp, else received_at) is after `since`. */
  since: string;
  until: string;
}

export interface GeneratedTrackingPlan {
  /** The created plan; its draft is the inference, nothing is published. */
  plan: TrackingPlanView;
  window: TrafficWindowView;
  rules: GeneratedRuleView[];
  flagged: FlaggedPropertyView[];
  /**
   * What the caps left out: names past the 200 most frequent of a table, or profile rows past
   * 100,000 (then some rules may miss members).
   */
  truncated: { names: boolean; profile: boolean };
}

export interface GeneratedTrackingPlanAnswer {
  data: GeneratedTrackingPlan;
}

export interface PreviewTrackingPlanBody {
  /** The last N days (1-90) of the account's warehouse; default 7. */
  days?: TrafficDays;
  /** A published version; absent: the draft. */
  version?: PinnedVersion;
  /**
   * The policy to decide by (as a binding's); absent: the binding's of `writeKeyId`, else
   * every class `allow`.
   */
  policy?: PlanPolicyInput;
  /**
   * Take the policy of this write key's binding. Events are not filtered by it: the
   * warehouse tables do not record the key an event came with.
   * @format uuid
   */
  writeKeyId?: string;
}

export interface PreviewActionCounts {
  allow: number;
  omit: number;
  quarantine: number;
}

/** Violations per code. */
export type PreviewCodeCounts = { [code: string]: number };

export interface PreviewEventView {
  type: 'track' | 'page' | 'screen' | 'identify' | 'group' | 'alias';
  /** track: the event; page, screen: the name (null when sent without one). */
  name: string | null;
  /** Calls seen in the window. */
  observed: number;
  /** The latest of them that were checked. */
  checked: number;
  /** Checked calls with at least one violation. */
  withViolations: number;
  actions: PreviewActionCounts;
  codes: PreviewCodeCounts;
}

export interface PreviewViolationView {
  code: string;
  path: string;
  keyword: string;
  message: string;
  ruleVersion?: number;
}

export interface PreviewSampleView {
  messageId: string;
  type: string;
  name: string | null;
  action: 'allow' | 'omit' | 'quarantine';
  /** JSON Pointers an omit would strip. */
  omitted: string[];
  violations: PreviewViolationView[];
}

export interface TrackingPlanPreview {
  planId: string;
  /** The version checked against; null: the draft. */
  version: number | null;
  window: TrafficWindowView;
  /** Where the policy came from. */
  policySource: 'body' | 'binding' | 'default';
  policy: PlanPolicyView;
  /** Calls in the window, and the calls checked (the latest per name, within the caps). */
  observed: number;
  checked: number;
  /** Checked calls with at least one violation. */
  withViolations: number;
  /** What the warehouse destination would have done with the checked calls (decideEvent). */
  actions: PreviewActionCounts;
  codes: PreviewCodeCounts;
  events: PreviewEventView[];
  /** The first checked calls with violations, at most 20. */
  samples: PreviewSampleView[];
}

export interface TrackingPlanPreviewAnswer {
  data: TrackingPlanPreview;
}
