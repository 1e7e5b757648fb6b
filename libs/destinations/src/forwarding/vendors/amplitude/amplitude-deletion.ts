import type { ResolvedDestination } from '@pipeline/tenancy';
import { regionalHost, requiredText } from '../../destination-settings';
import type { VendorClientOptions } from '../../forwarder';
import {
  callDeletion,
  callPoll,
  credentialMissing,
  deletionFailureCodes,
  guardedPoll,
  type DeletionBatch,
  type DeletionBatchOutcome,
  type DeletionPollOutcome,
  type IdSelection,
  BatchedDeletionClient,
} from '../../subject-deletion';
import { basicAuth, type VendorResponse } from '../../vendor-request';

/** The User Privacy API (v1) lives on the dashboard hosts, not on the ingestion ones. */
const hosts = { default: 'https://amplitude.com', eu: 'https://analytics.eu.amplitude.com' };
const PATH = '/api/2/deletions/users';

/** 100 ids per request (User Privacy API). */
export const AMPLITUDE_DELETION_MAX_IDS = 100;

/**
 * User ids only. Our anonymous ids reach Amplitude as device ids, which this API does not
 * take (it takes user ids and Amplitude's own numeric ids); deleting the user id deletes the
 * Amplitude user that device ids were merged into.
 */
const kinds: IdSelection = ['user_id'];

/** Who asked, in Amplitude's audit log and the email it sends the project's admins. */
const REQUESTER = 'pipeline privacy regulation';

/** The job days in an answer: one object, or an array of them (one per project, org-wide). */
function jobsOf(json: unknown): Record<string, unknown>[] {
  const list = Array.isArray(json)
    ? json
    : json !== null && typeof json === 'object' && Array.isArray((json as { deletions?: unknown }).deletions)
      ? (json as { deletions: unknown[] }).deletions
      : [json];
  return list.filter((job): job is Record<string, unknown> => job !== null && typeof job === 'object');
}

const DAY = /^\d{4}-\d{2}-\d{2}$/;
const daysOf = (json: unknown) =>
  [
    ...new Set(
      jobsOf(json).flatMap((job) => (typeof job.day === 'string' && DAY.test(job.day) ? [job.day] : [])),
    ),
  ].sort();

/**
 * Amplitude's User Privacy API v1: `POST /api/2/deletions/users` schedules the ids into the
 * job of a day 10 to 13 days ahead, which runs then (`staging`, `submitted`, `done`). The
 * outcome is `forwarded` with that day (days, comma-separated, when the answer names several)
 * as the job id; `poll` lists the jobs of those days until all are `done`.
 */
export class AmplitudeDeletionClient extends BatchedDeletionClient {
  readonly appType = 'amplitude';
  /** Amplitude documents no rate limit for this API. */
  readonly minIntervalMs = 0;

  constructor(client: VendorClientOptions) {
    super(client, { credentials: ['apiKey', 'secretKey'], kinds, maxIds: AMPLITUDE_DELETION_MAX_IDS });
  }

  private access(destination: ResolvedDestination) {
    const apiKey = requiredText(destination.credentials, 'apiKey', 'credentials');
    const secretKey = requiredText(destination.credentials, 'secretKey', 'credentials');
    return {
      baseUrl: this.client.baseUrl ?? regionalHost(destination.appConfig, hosts),
      authorization: basicAuth(apiKey, secretKey),
      secrets: [apiKey, secretKey],
    };
  }

  protected async request(
    destination: ResolvedDestination,
    batch: DeletionBatch,
    signal?: AbortSignal,
  ): Promise<DeletionBatchOutcome> {
    const { baseUrl, authorization, secrets } = this.access(destination);
    const read = (response: VendorResponse): DeletionBatchOutcome | undefined => {
      if (response.status < 200 || response.status >= 300) return undefined;
      const days = daysOf(response.json);
      return days.length > 0
        ? { status: 'forwarded', vendorJobId: days.join(',') }
        : {
            status: 'failed',
            code: deletionFailureCodes.invalidResponse,
            message: 'the answer names no deletion job',
            // Scheduling the same ids again joins them to the same job: safe to repeat.
            retryable: true,
          };
    };
    return callDeletion(
      { client: this.client, signal, hidden: [...batch.ids, ...secrets], read },
      {
        method: 'POST',
        url: `${baseUrl}${PATH}`,
        headers: { 'Content-Type': 'application/json', Authorization: authorization },
        // Ids that never reached Amplitude (no consent, filtered) would fail the whole
        // request otherwise; there is nothing of theirs to delete.
        body: JSON.stringify({ user_ids: batch.ids, requester: REQUESTER, ignore_invalid_id: true }),
      },
    );
  }

  poll(
    destination: ResolvedDestination,
    vendorJobId: string,
    signal?: AbortSignal,
  ): Promise<DeletionPollOutcome> {
    return guardedPoll(async () => {
      const days = vendorJobId
        .split(',')
        .filter((day) => DAY.test(day))
        .sort();
      const first = days[0];
      const last = days[days.length - 1];
      if (!first || !last) {
        return { status: 'failed', code: deletionFailureCodes.jobNotFound, message: 'not a job day' };
      }
      const missing = this.missingCredential(destination);
      if (missing)
        return {
          status: 'failed',
          code: deletionFailureCodes.credentialMissing,
          message: credentialMissing(missing).message,
        };
      const { baseUrl, authorization, secrets } = this.access(destination);
      const query = new URLSearchParams({ start_day: first, end_day: last });
      return callPoll(
        { client: this.client, signal, hidden: secrets },
        {
          method: 'GET',
          url: `${baseUrl}${PATH}?${query.toString()}`,
          headers: { Accept: 'application/json', Authorization: authorization },
          body: '',
        },
        (response) => {
          const jobs = jobsOf(response.json);
          const states = days.map((day) => jobs.filter((job) => job.day === day).map((job) => job.status));
          if (states.some((statuses) => statuses.length === 0)) {
            return {
              status: 'failed',
              code: deletionFailureCodes.jobNotFound,
              message: `Amplitude lists no deletion job for ${days.join(', ')}`,
            };
          }
          return states.every((statuses) => statuses.every((status) => status === 'done'))
            ? { status: 'done' }
            : { status: 'forwarded' };
        },
      );
    });
  }
}
