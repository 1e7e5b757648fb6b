import type { ResolvedDestination } from '@pipeline/tenancy';
import { regionalHost, requiredText } from '../../destination-settings';
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
import { basicAuth } from '../../vendor-request';

const hosts = { default: 'https://track.customer.io', eu: 'https://track-eu.customer.io' };

/** One person per request: the id is in the path. */
const MAX_IDS = 1;

/** The forwarder identifies people by our user id (`identifiers.id`). */
const kinds: IdSelection = ['user_id'];

/**
 * Customer.io Track API v1 `POST /api/v1/customers/{id}/suppress`: deletes the person and
 * refuses the id from then on, where a plain DELETE would let the next identify re-create
 * them. Synchronous: 200 is done.
 */
export class CustomerIoDeletionClient implements SubjectDeletionClient {
  readonly appType = 'customer_io';
  /** 100 requests a second, the Track API's older and stricter documented limit. */
  readonly minIntervalMs = 10;

  constructor(private readonly client: VendorClientOptions) {}

  missingCredential(destination: ResolvedDestination): string | null {
    return missingText(destination.credentials, ['siteId', 'apiKey']);
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
      const siteId = requiredText(destination.credentials, 'siteId', 'credentials');
      const apiKey = requiredText(destination.credentials, 'apiKey', 'credentials');
      const baseUrl = this.client.baseUrl ?? regionalHost(destination.appConfig, hosts);
      const id = batch.ids[0] ?? '';
      return callDeletion(
        { client: this.client, signal, hidden: [id, siteId, apiKey] },
        {
          method: 'POST',
          url: `${baseUrl}/api/v1/customers/${encodeURIComponent(id)}/suppress`,
          headers: { Authorization: basicAuth(siteId, apiKey) },
          body: '',
        },
      );
    });
  }
}
