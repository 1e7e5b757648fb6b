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

const DEFAULT_HOST = 'https://api.hubapi.com';

/** One contact per request. */
const MAX_IDS = 1;

/**
 * Emails only: the forwarder upserts contacts by email, so HubSpot knows nobody by our ids.
 * The caller passes the emails the warehouse held for the subjects, captured before their
 * rows were deleted; no email means nothing was sent there, and the plan is empty.
 */
const kinds: IdSelection = ['email'];

/** HubSpot's rate windows are ten seconds long and send no Retry-After (as for the forwarder). */
const RATE_PAUSE_MS = 10_000;

/**
 * HubSpot CRM v3 `POST /crm/v3/objects/contacts/gdpr-delete`
 * `{"objectId":"<email>","idProperty":"email"}`: permanently deletes the contact and blocks
 * the email (an unknown one is blocked all the same). Synchronous: 204 is done.
 */
export class HubSpotDeletionClient extends BatchedDeletionClient {
  readonly appType = 'hubspot';
  /** 100 requests per ten seconds, the smallest private-app allowance. */
  readonly minIntervalMs = 100;

  constructor(client: VendorClientOptions) {
    super(client, { credentials: ['accessToken'], kinds, maxIds: MAX_IDS });
  }

  protected async request(
    destination: ResolvedDestination,
    batch: DeletionBatch,
    signal?: AbortSignal,
  ): Promise<DeletionBatchOutcome> {
    const token = requiredText(destination.credentials, 'accessToken', 'credentials');
    const baseUrl = this.client.baseUrl ?? DEFAULT_HOST;
    const email = batch.ids[0] ?? '';
    return callDeletion(
      {
        client: this.client,
        signal,
        hidden: [email, token],
        policy: { defaultRetryAfterMs: RATE_PAUSE_MS },
      },
      {
        method: 'POST',
        url: `${baseUrl}/crm/v3/objects/contacts/gdpr-delete`,
        headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${token}` },
        body: JSON.stringify({ objectId: email, idProperty: 'email' }),
      },
    );
  }
}
