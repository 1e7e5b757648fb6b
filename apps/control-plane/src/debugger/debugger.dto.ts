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
}

export type DeliveryOutcomeName =
  'stored' | 'delivered' | 'consent_skipped' | 'skipped' | 'retried' | 'dead_lettered';

/** Where an event went: one outcome at one destination (and integration). */
export interface DeliveryOutcomeView {
  /** `warehouse` or the forwarding kind (app type). */
  destination: string;
  integrationId: string | null;
  outcome: DeliveryOutcomeName;
  /** Why it was skipped, retried or dead-lettered; null otherwise. */
  reason: string | null;
  at: string;
}
