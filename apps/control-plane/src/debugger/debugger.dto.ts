/** One error of a recorded event: where (a dotted path, empty for the whole event or request) and what. */
export interface DebugEventErrorView {
  path: string;
  message: string;
  /** The request's error code, for errors of the whole request (e.g. `invalid_payload`, `rate_limit_exceeded`). */
  code?: string;
}

export type DebugEventStatus = 'accepted' | 'rejected';

/** An event as ingestion received it, for the live debugger. */
export interface DebugEvent {
  /** The Redis stream entry id; the SSE stream's event id (`Last-Event-ID`). */
  id: string;
  receivedAt: string;
  /** The request's X-Request-Id, or one ingestion made up: shared by the events of one request. */
  requestId: string;
  status: DebugEventStatus;
  /** Null for a request whose body could not be read (one item with the request's error). */
  type: string | null;
  event: string | null;
  messageId: string | null;
  errors: DebugEventErrorView[];
  /** The event as received; above 16 KB of JSON, its top-level scalars with `truncated: true`, `bytes` and `preview`. */
  payload: { [key: string]: unknown };
  truncated?: boolean;
  /**
   * When the write key binds a tracking plan and the event was accepted: the plan, and the
   * version the event was held to (null: the plan could not be read, `plan_unavailable`).
   */
  plan?: DebugEventPlan;
  /** With `plan`: the event's violations (at most 100), empty when it keeps to the plan. */
  violations?: DebugViolationView[];
  /** With `plan`: what the binding's policy does with the event. */
  planAction?: DebugPlanActionView;
}

export interface DebugEventPlan {
  planId: string;
  version: number | null;
}

/** A tracking-plan violation (docs/tracking-plans.md, "Violations"). */
export interface DebugViolationView {
  /** e.g. `unplanned_event`, `missing_required`, `type_mismatch`. */
  code: string;
  /** JSON Pointer into the event, e.g. `/properties/order_id`. */
  path: string;
  keyword: string;
  message: string;
  ruleVersion?: number;
}

export type DebugPlanActionName = 'allow' | 'omit' | 'quarantine';

/** What one destination does with an event under the policy. */
export interface DebugPlanDecisionView {
  /** `allow`: as it came; `omit`: without the values at `omitted`; `quarantine`: kept out (a dead letter of that destination). */
  action: DebugPlanActionName;
  /** JSON Pointers of the values stripped, with `omit`; empty otherwise. */
  omitted: string[];
}

/**
 * The action the policy takes on an event: `action` and `omitted` are what the warehouse and
 * every destination without an override do; `destinations`, by integration id (or
 * `warehouse`), what each destination the policy overrides does.
 */
export interface DebugPlanActionView extends DebugPlanDecisionView {
  destinations?: { [destination: string]: DebugPlanDecisionView };
}

export type DeliveryOutcomeName =
  'stored' | 'delivered' | 'consent_skipped' | 'skipped' | 'retried' | 'dead_lettered' | 'quarantined';

/** Where an event went: one outcome at one destination (and integration). */
export interface DeliveryOutcomeView {
  /** `warehouse` or the forwarding kind (app type). */
  destination: string;
  integrationId: string | null;
  outcome: DeliveryOutcomeName;
  /**
   * Why it was skipped, retried or dead-lettered; for `quarantined`, the codes of the violations
   * its tracking plan's policy kept it out for (comma-separated); null otherwise.
   */
  reason: string | null;
  /** A `stored` or `delivered` event's values its tracking plan's policy stripped (JSON Pointers); absent when none. */
  omitted?: string[];
  at: string;
}
