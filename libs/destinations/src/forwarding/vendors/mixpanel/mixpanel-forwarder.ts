import type { ResolvedDestination } from '@pipeline/tenancy';
import { deliverAll, type Endpoint, type ItemRejection, type Verdict } from '../../batch-delivery';
import { InvalidConfig, optionalText, regionalHost } from '../../destination-settings';
import type { Forwarder, OutboundEvent, SendOutcome, VendorClientOptions } from '../../forwarder';
import { basicAuth, failureOfStatus, type VendorResponse } from '../../vendor-request';
import { mixpanelRecordOf, type MixpanelRecord } from './mixpanel-mapping';

const hosts = {
  default: 'https://api.mixpanel.com',
  eu: 'https://api-eu.mixpanel.com',
  in: 'https://api-in.mixpanel.com',
};

/**
 * 2000 records per request; the body limit is 10 MB in current docs and 2 MB in the older
 * OpenAPI (whose 413 example still says 2097152 bytes), so the smaller one.
 */
const limits = { maxItems: 2000, maxBodyBytes: 2 * 1024 * 1024 };

/**
 * With strict=1 a 400 lists failed_records and still imports the others; Mixpanel says never
 * to retry a 400.
 */
function verdictOf(response: VendorResponse): Verdict {
  if (response.status >= 200 && response.status < 300) return { kind: 'accepted' };
  if (response.status === 413) return { kind: 'too_large' };
  const body = (response.json ?? {}) as Record<string, unknown>;
  if (response.status === 400 && Array.isArray(body.failed_records) && body.failed_records.length > 0) {
    const rejected: ItemRejection[] = [];
    for (const record of body.failed_records as Record<string, unknown>[]) {
      if (!Number.isInteger(record.index)) continue;
      const field = typeof record.field === 'string' ? record.field : 'record';
      const message = typeof record.message === 'string' ? record.message : 'rejected';
      rejected.push({ index: record.index as number, reason: `${field}: ${message}`, retryable: false });
    }
    if (rejected.length > 0) return { kind: 'accepted', rejected };
  }
  return { kind: 'failed', failure: failureOfStatus(response) };
}

interface MixpanelAuth {
  authorization: string;
  query: string;
}

/** A service account (with the project id), else the project token. */
function authOf(destination: ResolvedDestination): MixpanelAuth {
  const { credentials, appConfig } = destination;
  const account = optionalText(credentials, 'serviceAccount', 'credentials');
  const secret = optionalText(credentials, 'secret', 'credentials');
  const token = optionalText(credentials, 'projectToken', 'credentials');
  if (account && secret) {
    const projectId =
      optionalText(credentials, 'projectId', 'credentials') ??
      optionalText(appConfig, 'projectId', 'appConfig');
    if (!projectId) throw new InvalidConfig('a service account needs appConfig.projectId');
    return {
      authorization: basicAuth(account, secret),
      query: `strict=1&project_id=${encodeURIComponent(projectId)}`,
    };
  }
  if (token) return { authorization: basicAuth(token, ''), query: 'strict=1' };
  throw new InvalidConfig('credentials.projectToken (or serviceAccount and secret) is required');
}

/** Mixpanel's import API (`POST /import`). */
export class MixpanelForwarder implements Forwarder {
  readonly appType = 'mixpanel';

  constructor(private readonly client: VendorClientOptions) {}

  send(
    destination: ResolvedDestination,
    events: readonly OutboundEvent[],
    signal?: AbortSignal,
  ): Promise<SendOutcome> {
    return deliverAll(this.appType, events, { ...this.client, signal }, async (ledger) => {
      const auth = authOf(destination);
      const baseUrl = this.client.baseUrl ?? regionalHost(destination.appConfig, hosts);
      const endpoint: Endpoint<MixpanelRecord> = {
        limits,
        envelopeBytes: 2,
        request: (items) => ({
          method: 'POST',
          url: `${baseUrl}/import?${auth.query}`,
          headers: { 'Content-Type': 'application/json', Authorization: auth.authorization },
          body: JSON.stringify(items),
        }),
        verdict: verdictOf,
      };
      const mapped = ledger.mapEvents((outbound) => {
        const item = mixpanelRecordOf(outbound);
        return typeof item === 'string' ? item : [item];
      });
      await ledger.deliver(endpoint, mapped);
    });
  }
}
