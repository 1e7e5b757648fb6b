import { createHash } from 'node:crypto';
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
import { signedWebhookHeaders } from './webhook-signature';
import { webhookUrl } from './webhook-url';

/** One person per request, as Segment sends its delete messages. */
const MAX_IDS = 1;

/** The receiver got both kinds of id in the events: it is told to forget each. */
const kinds: IdSelection = ['user_id', 'anonymous_id'];

/** The message a receiver gets: Segment's `delete` convention. */
export interface WebhookDeleteMessage {
  type: 'delete';
  userId?: string;
  anonymousId?: string;
  /** The same for every attempt to delete this id, for the receiver to deduplicate. */
  messageId: string;
  timestamp: string;
}

/** Deterministic, so a retried request carries the same message id. */
export const webhookDeleteMessageId = (idKind: DeletionBatch['idKind'], id: string) =>
  `delete-${createHash('sha256').update(`${idKind}\n${id}`, 'utf8').digest('hex').slice(0, 32)}`;

function readAnswer(response: VendorResponse): DeletionBatchOutcome | undefined {
  if (response.status < 300 || response.status >= 400) return undefined;
  return {
    status: 'failed',
    code: deletionFailureCodes.vendorRefused,
    message: `redirect_not_followed: http_${response.status}`,
    retryable: false,
  };
}

/**
 * A webhook destination: `POST <url>` of one signed `{"type":"delete","userId":…}` message
 * per id (anonymous ids as `anonymousId`), with the forwarder's signature headers; redirects
 * are not followed. A 2xx is done: the receiver owns what deleting means to it.
 */
export class WebhookDeletionClient extends BatchedDeletionClient {
  readonly appType = 'webhook';
  readonly minIntervalMs = 0;

  constructor(client: VendorClientOptions) {
    super(client, { credentials: ['signingSecret'], kinds, maxIds: MAX_IDS });
  }

  protected async request(
    destination: ResolvedDestination,
    batch: DeletionBatch,
    signal?: AbortSignal,
  ): Promise<DeletionBatchOutcome> {
    const url = webhookUrl(destination.appConfig, destination.config.global);
    const secret = requiredText(destination.credentials, 'signingSecret', 'credentials');
    const id = batch.ids[0] ?? '';
    const now = new Date();
    const messageId = webhookDeleteMessageId(batch.idKind, id);
    const message: WebhookDeleteMessage = {
      type: 'delete',
      ...(batch.idKind === 'user_id' ? { userId: id } : { anonymousId: id }),
      messageId,
      timestamp: now.toISOString(),
    };
    const body = JSON.stringify(message);
    return callDeletion(
      { client: this.client, signal, redirect: 'manual', hidden: [id, secret], read: readAnswer },
      {
        method: 'POST',
        url,
        headers: signedWebhookHeaders(secret, body, messageId.slice('delete-'.length), now),
        body,
      },
    );
  }
}
