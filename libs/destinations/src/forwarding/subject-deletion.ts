import type { ResolvedDestination } from '@pipeline/tenancy';
import { InvalidConfig } from './destination-settings';
import type { VendorClientOptions } from './forwarder';
import {
  callVendor,
  describeAnswer,
  failureOfStatus,
  isRequestFailure,
  type StatusPolicy,
  type VendorRequest,
  type VendorResponse,
} from './vendor-request';

// The contract of the vendors' deletion clients, which privacy regulations use to erase a person. Like forwarder.ts it
// imports no client: the app catalog (@pipeline/catalog, deletionClientFor) knows them all.

/** The ids of the people a regulation erases, as the caller holds them. */
export interface DeletionSubjects {
  userIds: readonly string[];
  anonymousIds: readonly string[];
  /** The emails the warehouse held for them, captured before its rows were deleted (HubSpot). */
  emails: readonly string[];
}

export type DeletionIdKind = 'user_id' | 'anonymous_id' | 'email';

/** One request's worth: ids of one kind, never more than the vendor's maximum. */
export interface DeletionBatch {
  index: number;
  idKind: DeletionIdKind;
  ids: string[];
}

export type DeletionBatchOutcome =
  | { status: 'done' }
  | { status: 'forwarded'; vendorJobId: string }
  | { status: 'failed'; code: string; message: string; retryable: boolean; retryAfterMs?: number };

export type DeletionPollOutcome =
  { status: 'forwarded' } | { status: 'done' } | { status: 'failed'; code: string; message: string };

/** A client of one vendor's deletion API. */
export interface SubjectDeletionClient {
  readonly appType: string;
  /** Shortest wait between two requests to one destination (Mixpanel 1000), 0 when none. */
  readonly minIntervalMs: number;
  /** The credential field the vendor needs and the destination lacks (e.g. 'secretKey'), else null. */
  missingCredential(destination: ResolvedDestination): string | null;
  /**
   * Deterministic: every id exactly once across the batches, none over the vendor's maximum;
   * the same input gives the same batches (a crash resumes at a batch index).
   */
  plan(subjects: DeletionSubjects): DeletionBatch[];
  /** Never throws for a vendor's answer, a lost connection or a destination's bad config. */
  send(
    destination: ResolvedDestination,
    batch: DeletionBatch,
    signal?: AbortSignal,
  ): Promise<DeletionBatchOutcome>;
  /** Only for vendors that answer `forwarded`. */
  poll?(
    destination: ResolvedDestination,
    vendorJobId: string,
    signal?: AbortSignal,
  ): Promise<DeletionPollOutcome>;
}

/**
 * The stable codes of a failed outcome: the lead's status per target shows them.
 * `vendor_refused` carries the vendor's message; the others say enough by themselves.
 */
export const deletionFailureCodes = {
  credentialMissing: 'credential_missing',
  credentialRefused: 'credential_refused',
  rateLimited: 'rate_limited',
  vendorUnavailable: 'vendor_unavailable',
  network: 'network',
  vendorRefused: 'vendor_refused',
  invalidConfig: 'invalid_config',
  invalidBatch: 'invalid_batch',
  invalidResponse: 'invalid_response',
  taskFailed: 'vendor_task_failed',
  jobNotFound: 'job_not_found',
} as const;

type Failed = Extract<DeletionBatchOutcome, { status: 'failed' }>;

/** Which of the subjects' ids a vendor deletes, in this order. */
export type IdSelection = readonly DeletionIdKind[];

const idsOfKind = (subjects: DeletionSubjects, kind: DeletionIdKind): readonly string[] =>
  kind === 'user_id' ? subjects.userIds : kind === 'anonymous_id' ? subjects.anonymousIds : subjects.emails;

/**
 * The batches of `kinds`, `max` ids each at most, in the order the ids came. A repeated id is
 * sent once and an empty one never (no vendor can name it); nothing else is dropped.
 */
export function planDeletionBatches(
  subjects: DeletionSubjects,
  kinds: IdSelection,
  max: number,
): DeletionBatch[] {
  const batches: DeletionBatch[] = [];
  for (const idKind of kinds) {
    const ids = [...new Set(idsOfKind(subjects, idKind))].filter((id) => id.length > 0);
    for (let start = 0; start < ids.length; start += max) {
      batches.push({ index: batches.length, idKind, ids: ids.slice(start, start + max) });
    }
  }
  return batches;
}

/** A batch this client cannot send as it is: none of it goes, rather than a part. */
export function invalidBatch(batch: DeletionBatch, kinds: IdSelection, max: number): Failed | undefined {
  const problem = !kinds.includes(batch.idKind)
    ? `this vendor deletes by ${kinds.join(' or ')}, not ${batch.idKind}`
    : batch.ids.length === 0 || batch.ids.length > max
      ? `a batch holds 1 to ${max} ids, not ${batch.ids.length}`
      : batch.ids.some((id) => id.length === 0)
        ? 'an id is empty'
        : undefined;
  return problem
    ? { status: 'failed', code: deletionFailureCodes.invalidBatch, message: problem, retryable: false }
    : undefined;
}

/** The outcome for a credential the destination lacks: never sent, never silently skipped. */
export const credentialMissing = (field: string): Failed => ({
  status: 'failed',
  code: deletionFailureCodes.credentialMissing,
  message: `credentials.${field} is required to delete at this vendor`,
  retryable: false,
});

/** A present, non-blank credential or config text; the field's name when it is not. */
export function missingText(source: Record<string, unknown>, fields: readonly string[]): string | null {
  for (const field of fields) {
    const value = source[field];
    if (typeof value !== 'string' || value.trim() === '') return field;
  }
  return null;
}

/**
 * Text for a status: ids and secrets a vendor echoes are replaced, since regulations keep
 * their outcome after the ids themselves are erased.
 */
export function redacted(text: string, hidden: readonly string[]): string {
  let result = text;
  // Longest first, so an id inside another id does not leave part of the longer one.
  for (const value of [...hidden].filter((v) => v.length > 0).sort((a, b) => b.length - a.length)) {
    result = result.split(value).join('[redacted]');
  }
  return result;
}

/** The reading of an answer that is not a success, as every vendor's client shares it. */
export function failureOfAnswer(
  response: VendorResponse,
  hidden: readonly string[],
  policy?: StatusPolicy,
): Failed {
  const failure = failureOfStatus(response, policy);
  const message = redacted(`http_${response.status}: ${describeAnswer(response)}`, hidden);
  const code =
    response.status === 401 || response.status === 403
      ? deletionFailureCodes.credentialRefused
      : response.status === 429
        ? deletionFailureCodes.rateLimited
        : failure.retryable
          ? deletionFailureCodes.vendorUnavailable
          : deletionFailureCodes.vendorRefused;
  // A refused key stays refused however often it is tried.
  const retryable = code === deletionFailureCodes.credentialRefused ? false : failure.retryable;
  return {
    status: 'failed',
    code,
    message,
    retryable,
    ...(retryable && failure.retryAfterMs !== undefined ? { retryAfterMs: failure.retryAfterMs } : {}),
  };
}

/** The answer's reading by one vendor: an outcome, or undefined for the shared reading. */
export type AnswerReading = (response: VendorResponse) => DeletionBatchOutcome | undefined;

export interface DeletionCall {
  client: VendorClientOptions;
  signal?: AbortSignal;
  /** Webhooks do not follow redirects (the forwarder's rule). */
  redirect?: 'follow' | 'manual';
  /** Ids and secrets the outcome's message must not carry. */
  hidden: readonly string[];
  policy?: StatusPolicy;
  /** A vendor's own reading of some answers (a 404 that means "already gone"). */
  read?: AnswerReading;
}

/** One deletion request, its answer read into an outcome; no answer is a retryable failure. */
export async function callDeletion(
  call: DeletionCall,
  request: VendorRequest,
): Promise<DeletionBatchOutcome> {
  const answer = await callVendor(
    {
      ...call.client,
      ...(call.signal ? { signal: call.signal } : {}),
      ...(call.redirect ? { redirect: call.redirect } : {}),
    },
    request,
  );
  if (isRequestFailure(answer)) {
    return {
      status: 'failed',
      code: deletionFailureCodes.network,
      message: redacted(answer.reason, call.hidden),
      retryable: answer.retryable,
    };
  }
  const own = call.read?.(answer);
  if (own) return own;
  if (answer.status >= 200 && answer.status < 300) return { status: 'done' };
  return failureOfAnswer(answer, call.hidden, call.policy);
}

/**
 * Runs a client's send with the destination's config read inside: a config a request cannot
 * be built from is a failed outcome, not a throw.
 */
export async function guardedSend(send: () => Promise<DeletionBatchOutcome>): Promise<DeletionBatchOutcome> {
  try {
    return await send();
  } catch (error) {
    if (error instanceof InvalidConfig) {
      return {
        status: 'failed',
        code: deletionFailureCodes.invalidConfig,
        message: error.message,
        retryable: false,
      };
    }
    throw error;
  }
}

/** What a vendor's deletion client takes: its credential fields, the ids it deletes by, a batch's most. */
export interface DeletionShape {
  credentials: readonly string[];
  kinds: IdSelection;
  maxIds: number;
}

/**
 * What every vendor's deletion client does alike: the credential check, batches of the
 * vendor's size over the kinds of id it takes, and a send that answers a missing credential or
 * a batch the plan would not make before building the vendor's request (`request`), with the
 * destination's bad config a failed outcome (guardedSend).
 */
export abstract class BatchedDeletionClient implements SubjectDeletionClient {
  abstract readonly appType: string;
  abstract readonly minIntervalMs: number;

  constructor(
    protected readonly client: VendorClientOptions,
    private readonly shape: DeletionShape,
  ) {}

  missingCredential(destination: ResolvedDestination): string | null {
    return missingText(destination.credentials, this.shape.credentials);
  }

  plan(subjects: DeletionSubjects): DeletionBatch[] {
    return planDeletionBatches(subjects, this.shape.kinds, this.shape.maxIds);
  }

  send(
    destination: ResolvedDestination,
    batch: DeletionBatch,
    signal?: AbortSignal,
  ): Promise<DeletionBatchOutcome> {
    return guardedSend(async () => {
      const missing = this.missingCredential(destination);
      if (missing) return credentialMissing(missing);
      const invalid = invalidBatch(batch, this.shape.kinds, this.shape.maxIds);
      if (invalid) return invalid;
      return this.request(destination, batch, signal);
    });
  }

  /** The vendor's request for a batch that passed those checks; its config is read here. */
  protected abstract request(
    destination: ResolvedDestination,
    batch: DeletionBatch,
    signal?: AbortSignal,
  ): Promise<DeletionBatchOutcome>;
}

/**
 * How a poll reads an answer that is not a success: a refused key fails the target; a
 * throttled, unavailable or unreachable vendor leaves it `forwarded`, to be polled again.
 */
export function pollFailure(response: VendorResponse, hidden: readonly string[]): DeletionPollOutcome {
  const failure = failureOfAnswer(response, hidden);
  return failure.retryable
    ? { status: 'forwarded' }
    : { status: 'failed', code: failure.code, message: failure.message };
}

/** One poll request; no answer leaves the target `forwarded`. */
export async function callPoll(
  call: Omit<DeletionCall, 'read' | 'policy'>,
  request: VendorRequest,
  read: (response: VendorResponse) => DeletionPollOutcome,
): Promise<DeletionPollOutcome> {
  const answer = await callVendor(
    { ...call.client, ...(call.signal ? { signal: call.signal } : {}) },
    request,
  );
  if (isRequestFailure(answer)) return { status: 'forwarded' };
  if (answer.status < 200 || answer.status >= 300) return pollFailure(answer, call.hidden);
  return read(answer);
}

/** Config errors while polling fail the target, as they would fail the send. */
export async function guardedPoll(poll: () => Promise<DeletionPollOutcome>): Promise<DeletionPollOutcome> {
  try {
    return await poll();
  } catch (error) {
    if (error instanceof InvalidConfig) {
      return { status: 'failed', code: deletionFailureCodes.invalidConfig, message: error.message };
    }
    throw error;
  }
}
