import type { ResolvedDestination } from '@pipeline/tenancy';
import { requiredText } from '../../destination-settings';
import type { VendorClientOptions } from '../../forwarder';
import {
  callDeletion,
  deletionFailureCodes,
  type DeletionBatch,
  type DeletionBatchOutcome,
  type IdSelection,
  BatchedDeletionClient,
} from '../../subject-deletion';
import type { VendorResponse } from '../../vendor-request';

const DEFAULT_HOST = 'https://api.onesignal.com';

/** One user per request: the id is in the path. */
const MAX_IDS = 1;

/** The forwarder names users by external_id, our user id. */
const kinds: IdSelection = ['user_id'];

/** The error codes and titles of a 404, in one lowercase text. */
function errorText(response: VendorResponse): string {
  const errors = (response.json as { errors?: unknown } | undefined)?.errors;
  if (!Array.isArray(errors)) return '';
  return errors
    .map((error) =>
      typeof error === 'string'
        ? error
        : error !== null && typeof error === 'object'
          ? `${String((error as Record<string, unknown>).code ?? '')} ${String((error as Record<string, unknown>).title ?? '')}`
          : '',
    )
    .join(' ')
    .toLowerCase();
}

/**
 * A 404 for the user means OneSignal holds nobody by that id: nothing is left to delete. A 404
 * for the app is a wrong app id, which no retry fixes.
 */
function readAnswer(response: VendorResponse): DeletionBatchOutcome | undefined {
  if (response.status !== 404) return undefined;
  return /\bapp\b|app-not-found/.test(errorText(response))
    ? {
        status: 'failed',
        code: deletionFailureCodes.vendorRefused,
        message: 'http_404: OneSignal knows no app of this app id',
        retryable: false,
      }
    : { status: 'done' };
}

/**
 * OneSignal `DELETE /apps/{app_id}/users/by/external_id/{id}` with the App API key: deletes
 * the user's aliases, subscriptions and properties. OneSignal deletes "shortly after the
 * request is accepted" and offers no status to poll, so an accepted request is `done`.
 */
export class OneSignalDeletionClient extends BatchedDeletionClient {
  readonly appType = 'onesignal';
  /** 1,000 user requests a second per app (1 a second per user, and each id is sent once). */
  readonly minIntervalMs = 1;

  constructor(client: VendorClientOptions) {
    super(client, { credentials: ['appId', 'apiKey'], kinds, maxIds: MAX_IDS });
  }

  protected async request(
    destination: ResolvedDestination,
    batch: DeletionBatch,
    signal?: AbortSignal,
  ): Promise<DeletionBatchOutcome> {
    const appId = requiredText(destination.credentials, 'appId', 'credentials');
    const apiKey = requiredText(destination.credentials, 'apiKey', 'credentials');
    const baseUrl = this.client.baseUrl ?? DEFAULT_HOST;
    const id = batch.ids[0] ?? '';
    return callDeletion(
      { client: this.client, signal, hidden: [id, apiKey], read: readAnswer },
      {
        method: 'DELETE',
        url: `${baseUrl}/apps/${encodeURIComponent(appId)}/users/by/external_id/${encodeURIComponent(id)}`,
        headers: { Accept: 'application/json', Authorization: `Key ${apiKey}` },
        body: '',
      },
    );
  }
}
