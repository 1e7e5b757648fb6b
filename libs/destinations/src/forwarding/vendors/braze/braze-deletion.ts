import type { ResolvedDestination } from '@pipeline/tenancy';
import { requiredText } from '../../destination-settings';
import type { VendorClientOptions } from '../../forwarder';
import {
  callDeletion,
  type DeletionBatch,
  type DeletionBatchOutcome,
  type IdSelection,
  BatchedDeletionClient,
} from '../../subject-deletion';
import type { VendorResponse } from '../../vendor-request';
import { brazeRestEndpoint } from './braze-endpoint';

/** "Up to 50 external_ids … in a single request", one kind of identifier per request. */
export const BRAZE_DELETION_MAX_IDS = 50;

/** Our user id is the Braze external_id; anonymous profiles (aliases) are not deleted here. */
const kinds: IdSelection = ['user_id'];

/** Braze's X-RateLimit-Reset is the epoch second the window resets (as for /users/track). */
function untilRateLimitReset(response: VendorResponse): number | undefined {
  const reset = Number(response.headers.get('x-ratelimit-reset'));
  return Number.isFinite(reset) && reset > 0 ? Math.max(0, reset * 1000 - Date.now()) : undefined;
}

/**
 * Braze `POST /users/delete` `{"external_ids":[…]}` with a REST key holding `users.delete`:
 * synchronous and irreversible. A 404 means no profile had those ids: nothing is left to
 * delete, so the batch is done (as RudderStack reads it).
 */
export class BrazeDeletionClient extends BatchedDeletionClient {
  readonly appType = 'braze';
  /** 20,000 requests a minute, shared with identify and alias calls: no pause needed. */
  readonly minIntervalMs = 0;

  constructor(client: VendorClientOptions) {
    super(client, { credentials: ['apiKey'], kinds, maxIds: BRAZE_DELETION_MAX_IDS });
  }

  protected async request(
    destination: ResolvedDestination,
    batch: DeletionBatch,
    signal?: AbortSignal,
  ): Promise<DeletionBatchOutcome> {
    const apiKey = requiredText(destination.credentials, 'apiKey', 'credentials');
    // The tenant's endpoint is checked even when the operator replaced the host.
    const restEndpoint = brazeRestEndpoint(destination.appConfig);
    const baseUrl = this.client.baseUrl ?? restEndpoint;
    return callDeletion(
      {
        client: this.client,
        signal,
        hidden: [...batch.ids, apiKey],
        policy: { retryAfterFallback: untilRateLimitReset },
        read: (response) => (response.status === 404 ? { status: 'done' } : undefined),
      },
      {
        method: 'POST',
        url: `${baseUrl}/users/delete`,
        headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${apiKey}` },
        body: JSON.stringify({ external_ids: batch.ids }),
      },
    );
  }
}
