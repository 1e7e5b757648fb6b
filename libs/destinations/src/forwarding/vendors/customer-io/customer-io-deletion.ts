import type { ResolvedDestination } from '@pipeline/tenancy';
import { regionalHost, requiredText } from '../../destination-settings';
import type { VendorClientOptions } from '../../forwarder';
import {
  callDeletion,
  type DeletionBatch,
  type DeletionBatchOutcome,
  type IdSelection,
  BatchedDeletionClient,
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
export class CustomerIoDeletionClient extends BatchedDeletionClient {
  readonly appType = 'customer_io';
  /** 100 requests a second, the Track API's older and stricter documented limit. */
  readonly minIntervalMs = 10;

  constructor(client: VendorClientOptions) {
    super(client, { credentials: ['siteId', 'apiKey'], kinds, maxIds: MAX_IDS });
  }

  protected async request(
    destination: ResolvedDestination,
    batch: DeletionBatch,
    signal?: AbortSignal,
  ): Promise<DeletionBatchOutcome> {
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
  }
}
