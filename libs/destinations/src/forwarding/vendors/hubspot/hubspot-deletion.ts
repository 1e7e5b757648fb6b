import type { ResolvedDestination } from '@pipeline/tenancy';
import { requiredText } from '../../destination-settings';
import type { VendorClientOptions } from '../../forwarder';
import {
  callDeletion,
  credentialMissing,
  guardedSend,
  invalidBatch,
  missingText,
  planDeletionBatches,
  type DeletionBatch,
  type DeletionBatchOutcome,
  type DeletionSubjects,
  type IdSelection,
  type SubjectDeletionClient,
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
export class HubSpotDeletionClient implements SubjectDeletionClient {
  readonly appType = 'hubspot';
  /** 100 requests per ten seconds, the smallest private-app allowance. */
  readonly minIntervalMs = 100;

  constructor(private readonly client: VendorClientOptions) {}

  missingCredential(destination: ResolvedDestination): string | null {
    return missingText(destination.credentials, ['accessToken']);
  }

  plan(subjects: DeletionSubjects): DeletionBatch[] {
    return planDeletionBatches(subjects, kinds, MAX_IDS);
  }

  send(
    destination: ResolvedDestination,
    batch: DeletionBatch,
    signal?: AbortSignal,
  ): Promise<DeletionBatchOutcome> {
    return guardedSend(async () => {
      const missing = this.missingCredential(destination);
      if (missing) return credentialMissing(missing);
      const invalid = invalidBatch(batch, kinds, MAX_IDS);
      if (invalid) return invalid;
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
    });
  }
}
