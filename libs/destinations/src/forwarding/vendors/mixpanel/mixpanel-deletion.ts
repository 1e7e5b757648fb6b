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
import type { VendorResponse } from '../../vendor-request';

/** The GDPR API is on the application hosts (mixpanel.com), not the ingestion ones (api.…). */
const hosts = {
  default: 'https://mixpanel.com',
  eu: 'https://eu.mixpanel.com',
  in: 'https://in.mixpanel.com',
};
const PATH = '/api/app/data-deletions/v3.0';

/**
 * Distinct ids per deletion task: Mixpanel's reference says "up to 1999" for deletions (2000
 * for retrievals), so the smaller.
 */
export const MIXPANEL_DELETION_MAX_IDS = 1999;

/** "1 request per second" for the GDPR APIs. */
export const MIXPANEL_DELETION_INTERVAL_MS = 1000;

/** Both are distinct ids at Mixpanel: our forwarder sends the user id, else the anonymous id. */
const kinds: IdSelection = ['user_id', 'anonymous_id'];

/** A task's states (Check Status of Deletion): which ones are still on their way. */
const pending = new Set(['PENDING', 'STAGING', 'STARTED', 'UNKNOWN']);

function taskIdOf(json: unknown): string | undefined {
  const results = (json as { results?: unknown } | undefined)?.results;
  // The reference shows `results: {task_id}`; an older example shows `results: [{tracking_id}]`.
  const first = Array.isArray(results) ? results[0] : results;
  if (first === null || typeof first !== 'object') return undefined;
  const { task_id: taskId, tracking_id: trackingId } = first as Record<string, unknown>;
  const id = taskId ?? trackingId;
  return typeof id === 'string' && id.length > 0 ? id : typeof id === 'number' ? String(id) : undefined;
}

/**
 * Mixpanel's GDPR API v3: `POST /api/app/data-deletions/v3.0/?token=<project token>` with the
 * GDPR OAuth token (a person's, valid one year) creates a task deleting every event and
 * profile of the distinct ids, answered with its task id (`forwarded`); `poll` reads the task
 * until SUCCESS (done) or FAILURE (failed). Compliance type GDPR: the same deletion as CCPA,
 * under the stricter law's name.
 */
export class MixpanelDeletionClient extends BatchedDeletionClient {
  readonly appType = 'mixpanel';
  readonly minIntervalMs = MIXPANEL_DELETION_INTERVAL_MS;

  constructor(client: VendorClientOptions) {
    // The project token names the project in the URL: a service-account app lacks it.
    super(client, { credentials: ['gdprToken', 'projectToken'], kinds, maxIds: MIXPANEL_DELETION_MAX_IDS });
  }

  private access(destination: ResolvedDestination) {
    const gdprToken = requiredText(destination.credentials, 'gdprToken', 'credentials');
    const projectToken = requiredText(destination.credentials, 'projectToken', 'credentials');
    return {
      baseUrl: this.client.baseUrl ?? regionalHost(destination.appConfig, hosts),
      headers: { Authorization: `Bearer ${gdprToken}` },
      query: new URLSearchParams({ token: projectToken }).toString(),
      secrets: [gdprToken, projectToken],
    };
  }

  protected async request(
    destination: ResolvedDestination,
    batch: DeletionBatch,
    signal?: AbortSignal,
  ): Promise<DeletionBatchOutcome> {
    const { baseUrl, headers, query, secrets } = this.access(destination);
    const read = (response: VendorResponse): DeletionBatchOutcome | undefined => {
      if (response.status < 200 || response.status >= 300) return undefined;
      const taskId = taskIdOf(response.json);
      return taskId
        ? { status: 'forwarded', vendorJobId: taskId }
        : {
            status: 'failed',
            code: deletionFailureCodes.invalidResponse,
            message: 'the answer names no deletion task',
            retryable: true,
          };
    };
    return callDeletion(
      { client: this.client, signal, hidden: [...batch.ids, ...secrets], read },
      {
        method: 'POST',
        url: `${baseUrl}${PATH}/?${query}`,
        headers: { ...headers, 'Content-Type': 'application/json' },
        body: JSON.stringify({ distinct_ids: batch.ids, compliance_type: 'GDPR' }),
      },
    );
  }

  poll(
    destination: ResolvedDestination,
    vendorJobId: string,
    signal?: AbortSignal,
  ): Promise<DeletionPollOutcome> {
    return guardedPoll(async () => {
      const missing = this.missingCredential(destination);
      if (missing) {
        return {
          status: 'failed',
          code: deletionFailureCodes.credentialMissing,
          message: credentialMissing(missing).message,
        };
      }
      const { baseUrl, headers, query, secrets } = this.access(destination);
      return callPoll(
        { client: this.client, signal, hidden: secrets },
        {
          method: 'GET',
          url: `${baseUrl}${PATH}/${encodeURIComponent(vendorJobId)}?${query}`,
          headers: { ...headers, Accept: 'application/json' },
          body: '',
        },
        (response) => {
          const results = (response.json as { results?: { status?: unknown } } | undefined)?.results;
          const status = typeof results?.status === 'string' ? results.status : 'UNKNOWN';
          if (status === 'SUCCESS') return { status: 'done' };
          if (pending.has(status)) return { status: 'forwarded' };
          return {
            status: 'failed',
            code: status === 'NOT_FOUND' ? deletionFailureCodes.jobNotFound : deletionFailureCodes.taskFailed,
            message: `Mixpanel deletion task ${status}`,
          };
        },
      );
    });
  }
}
