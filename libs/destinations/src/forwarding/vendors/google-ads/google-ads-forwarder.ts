/**
 * Google Ads offline click conversions (app type `google_ads`, kind advertising: sent only
 * with marketing consent, which the caller checks):
 * `POST https://googleads.googleapis.com/{apiVersion}/customers/{customerId}:uploadClickConversions`
 * with `{"conversions":[…],"partialFailure":true}`, at most 2000 conversions per request.
 *
 * Credentials: `developerToken` (header `developer-token`), `clientId`, `clientSecret` and
 * `refreshToken` (an OAuth client's, with the `adwords` scope). The access token is obtained
 * with `POST https://oauth2.googleapis.com/token` (form body grant_type=refresh_token,
 * client_id, client_secret, refresh_token) and cached per client and refresh token until a
 * minute before it expires; it is sent as `Authorization: Bearer`. With a base URL configured
 * for google_ads (VENDOR_BASE_URL_GOOGLE_ADS), both the API and the token endpoint are on it:
 * the token endpoint is `<base URL>/token` (one proxy or look-alike serves both).
 * App config: `customerId` (10 digits, dashes allowed), `loginCustomerId` (optional, the
 * manager account: header `login-customer-id`), `apiVersion` (default `v26`),
 * `conversionActions` (event name → conversion action id). The integration's
 * `config.global.conversionActions` replaces the app's when set.
 *
 * Which events: track calls whose name has a conversion action. Each needs a click id or an
 * email: `gclid` (else `gbraid`, else `wbraid`) from `context.clickId`, the properties, or the
 * page URL's query; without one, `userIdentifiers` with `hashedEmail` (SHA-256 of the trimmed,
 * lowercased email, dots removed before @gmail.com/@googlemail.com, as Google normalises) and
 * `hashedPhoneNumber` when the phone is E.164. Events with neither are skipped (`no_click_id`),
 * as are events without a conversion action (`no_conversion_action`) and other call types.
 * A conversion: `conversionAction` = `customers/{customerId}/conversionActions/{id}`,
 * `conversionDateTime` = the corrected event time as `yyyy-mm-dd hh:mm:ss+00:00`,
 * `conversionValue` (properties.value, else revenue, else total), `currencyCode` (ISO 4217),
 * `orderId` (properties.order_id, else the messageId, hashed when over 64 characters: Google
 * deduplicates on it, so a retried event is not counted twice), and
 * `consent.adUserData = GRANTED` when the event's `context.consent.marketing` is true (absent
 * otherwise: Google reads that as unspecified; a `false` never reaches this client).
 *
 * Answers: `partialFailureError.details[].errors[]` name the failed conversions by
 * `location.fieldPathElements` (`conversions`, index): those are rejected, the rest accepted
 * (retryable for TOO_RECENT_CONVERSION_ACTION, CONCURRENT_MODIFICATION and internal errors);
 * 401/403 stop the send; 429 (RESOURCE_EXHAUSTED; 30 s unless Retry-After says otherwise) and
 * 5xx are retryable; other 4xx fail the request's conversions permanently. The token
 * endpoint's 400/401 (invalid_grant, invalid_client) stop the send permanently.
 */
import type { ResolvedDestination } from '@pipeline/tenancy';
import {
  deliverAll,
  type DeliveryLedger,
  type Endpoint,
  type ItemRejection,
  type Verdict,
} from '../../batch-delivery';
import { InvalidConfig, optionalText, requiredText } from '../../destination-settings';
import type { Forwarder, OutboundEvent, SendOutcome, VendorClientOptions } from '../../forwarder';
import { sha256Hex } from '../../hashed-identity';
import {
  abortReason,
  callVendor,
  failureOfStatus,
  isRequestFailure,
  type VendorHttp,
  type VendorResponse,
} from '../../vendor-request';
import { clickConversionOf, conversionActionsOf, type ClickConversion } from './google-ads-mapping';

const API_HOST = 'https://googleads.googleapis.com';
const TOKEN_HOST = 'https://oauth2.googleapis.com';
/** v21 and v22 were sunset in August and October 2026; a version lives about a year. */
const DEFAULT_VERSION = 'v26';

/** 2000 conversions per request (Google Ads); the byte cap is ours. */
const limits = { maxItems: 2000, maxBodyBytes: 8 * 1024 * 1024 };
const RATE_LIMIT_PAUSE_MS = 30_000;

const RETRYABLE_CONVERSION_ERRORS = new Set([
  'TOO_RECENT_CONVERSION_ACTION',
  'CONCURRENT_MODIFICATION',
  'INTERNAL_ERROR',
  'TRANSIENT_ERROR',
]);

/** The partial-failure errors by conversion index. */
function partialFailures(body: Record<string, unknown>): ItemRejection[] {
  const status = body.partialFailureError as { details?: unknown } | undefined;
  if (!status || !Array.isArray(status.details)) return [];
  const rejected: ItemRejection[] = [];
  for (const detail of status.details as Record<string, unknown>[]) {
    if (!Array.isArray(detail.errors)) continue;
    for (const error of detail.errors as Record<string, unknown>[]) {
      const path = (
        error.location as { fieldPathElements?: { fieldName?: string; index?: number }[] } | undefined
      )?.fieldPathElements;
      const element = path?.find((p) => p.fieldName === 'conversions');
      if (!element || !Number.isInteger(element.index)) continue;
      const codes = Object.values((error.errorCode ?? {}) as Record<string, unknown>).map(String);
      const code = codes[0] ?? 'UNKNOWN';
      rejected.push({
        index: element.index as number,
        reason: `rejected: ${code}`,
        retryable: codes.some((c) => RETRYABLE_CONVERSION_ERRORS.has(c)),
      });
    }
  }
  return rejected;
}

function verdictOf(response: VendorResponse): Verdict {
  if (response.status === 413) return { kind: 'too_large' };
  if (response.status < 200 || response.status >= 300)
    return {
      kind: 'failed',
      failure: failureOfStatus(response, { defaultRetryAfterMs: RATE_LIMIT_PAUSE_MS }),
    };
  const rejected = partialFailures((response.json ?? {}) as Record<string, unknown>);
  return rejected.length > 0 ? { kind: 'accepted', rejected } : { kind: 'accepted' };
}

interface CachedToken {
  accessToken: string;
  expires: number;
}

/** Access tokens by token endpoint, client and refresh token, shared by every client instance. */
const tokenCache = new Map<string, CachedToken>();

/** Google Ads API `ConversionUploadService.UploadClickConversions`. */
export class GoogleAdsForwarder implements Forwarder {
  readonly appType = 'google_ads';

  constructor(private readonly client: VendorClientOptions) {}

  /** A valid access token, or undefined after halting the send. */
  private async accessToken(
    ledger: DeliveryLedger,
    http: VendorHttp,
    tokenUrl: string,
    credentials: { clientId: string; clientSecret: string; refreshToken: string },
  ): Promise<string | undefined> {
    const key = sha256Hex(
      `${tokenUrl}\n${credentials.clientId}\n${credentials.clientSecret}\n${credentials.refreshToken}`,
    );
    const cached = tokenCache.get(key);
    if (cached && cached.expires > Date.now()) return cached.accessToken;
    if (http.signal?.aborted) return void ledger.halt({ reason: abortReason(http.signal), retryable: true });
    const answer = await callVendor(http, {
      method: 'POST',
      url: tokenUrl,
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', Accept: 'application/json' },
      body: new URLSearchParams({
        grant_type: 'refresh_token',
        client_id: credentials.clientId,
        client_secret: credentials.clientSecret,
        refresh_token: credentials.refreshToken,
      }).toString(),
    });
    ledger.noteRequest();
    if (isRequestFailure(answer)) return void ledger.halt(answer);
    if (answer.status < 200 || answer.status >= 300) {
      const failure = failureOfStatus(answer);
      // A revoked refresh token or an unknown client fails every request the same way.
      const fatal = answer.status === 400 || answer.status === 401 || answer.status === 403;
      return void ledger.halt(fatal ? { ...failure, fatal: true } : failure);
    }
    const body = (answer.json ?? {}) as { access_token?: unknown; expires_in?: unknown };
    if (typeof body.access_token !== 'string' || body.access_token === '')
      return void ledger.halt({ reason: 'invalid_response: no access_token', retryable: true });
    const lifetime = typeof body.expires_in === 'number' ? body.expires_in : 3600;
    tokenCache.set(key, { accessToken: body.access_token, expires: Date.now() + (lifetime - 60) * 1000 });
    return body.access_token;
  }

  send(
    destination: ResolvedDestination,
    events: readonly OutboundEvent[],
    signal?: AbortSignal,
  ): Promise<SendOutcome> {
    const http = { ...this.client, signal };
    return deliverAll(this.appType, events, http, async (ledger) => {
      const credentials = {
        developerToken: requiredText(destination.credentials, 'developerToken', 'credentials'),
        clientId: requiredText(destination.credentials, 'clientId', 'credentials'),
        clientSecret: requiredText(destination.credentials, 'clientSecret', 'credentials'),
        refreshToken: requiredText(destination.credentials, 'refreshToken', 'credentials'),
      };
      const customerId = requiredText(destination.appConfig, 'customerId', 'appConfig').replace(/-/g, '');
      if (!/^\d{10}$/.test(customerId)) throw new InvalidConfig('appConfig.customerId must be 10 digits');
      const login = optionalText(destination.appConfig, 'loginCustomerId', 'appConfig')?.replace(/-/g, '');
      if (login !== undefined && !/^\d{10}$/.test(login))
        throw new InvalidConfig('appConfig.loginCustomerId must be 10 digits');
      const version = optionalText(destination.appConfig, 'apiVersion', 'appConfig') ?? DEFAULT_VERSION;
      if (!/^v\d{1,3}$/.test(version)) throw new InvalidConfig('appConfig.apiVersion must look like v26');
      const actions = conversionActionsOf(destination);
      const apiBase = this.client.baseUrl ?? API_HOST;
      const tokenUrl = `${this.client.baseUrl ?? TOKEN_HOST}/token`;

      const mapped = ledger.mapEvents((outbound) => {
        const item = clickConversionOf(outbound, customerId, actions);
        return typeof item === 'string' ? item : [item];
      });
      if (mapped.size === 0) return;
      const accessToken = await this.accessToken(ledger, http, tokenUrl, credentials);
      if (!accessToken) return;
      const endpoint: Endpoint<ClickConversion> = {
        limits,
        envelopeBytes: Buffer.byteLength(JSON.stringify({ conversions: [], partialFailure: true })),
        request: (items) => ({
          method: 'POST',
          url: `${apiBase}/${version}/customers/${customerId}:uploadClickConversions`,
          headers: {
            'Content-Type': 'application/json',
            Authorization: `Bearer ${accessToken}`,
            'developer-token': credentials.developerToken,
            ...(login ? { 'login-customer-id': login } : {}),
          },
          body: JSON.stringify({ conversions: items, partialFailure: true }),
        }),
        verdict: verdictOf,
      };
      await ledger.deliver(endpoint, mapped);
    });
  }
}
