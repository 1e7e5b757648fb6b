/**
 * HubSpot contacts destination (app type `hubspot`, kind customer_data): identify calls
 * upsert HubSpot contacts by email through the CRM v3 batch upsert,
 * `POST https://api.hubapi.com/crm/v3/objects/contacts/batch/upsert`,
 * `{"inputs":[{"idProperty":"email","id":"<email>","properties":{…}}]}`, at most 100 inputs
 * per request.
 *
 * Credentials: `accessToken` (a private app token, scopes `crm.objects.contacts.write` and
 * `crm.schemas.contacts.read`), sent as `Authorization: Bearer`. Config: none.
 *
 * Which events: identify calls with a valid email in their traits. Every other call type is
 * skipped (`identify_only`), as the Braze client keeps profile updates to identify; an
 * identify without a valid email is skipped (`no_email`). Two identifies of one email in a
 * request are merged (later traits win): HubSpot refuses a batch naming an id twice.
 *
 * Trait → property mapping (`hubspotPropertyName`): firstName/first_name → firstname,
 * lastName/last_name → lastname, title → jobtitle, postalCode/postal_code/zip → zip,
 * address.{street,city,state,postalCode,country} → address, city, state, zip, country;
 * phone, company, website, city, state, country keep their names; any other trait becomes its
 * name in snake_case (`planType` → `plan_type`), accents stripped, lowercased, every character
 * outside [a-z0-9_] replaced by `_` (runs collapsed, ends trimmed); a name not starting with a
 * letter is dropped. Only properties the account defines and may write are sent (read from
 * `GET /crm/v3/properties/contacts`, cached 5 minutes per token): HubSpot fails a whole batch
 * on an unknown property, so unknown traits are left out rather than failing the contact.
 * Values: strings as they are, numbers and booleans as text, arrays of scalars joined with `;`
 * (multi-checkbox), other objects as JSON; `date` properties get `YYYY-MM-DD`; null and values
 * over 65,536 characters are left out.
 *
 * Answers: 200/201 accepted; 207 with `errors[].context.ids` rejects the named contacts; a
 * 400 VALIDATION_ERROR (one invalid contact fails its batch) halves the request until the
 * contact is found, which alone fails permanently (within DELIVERY_MAX_SPLIT_REQUESTS); any
 * other 400 fails the request permanently; 401/403 stop the send; 429 (no Retry-After; the ten-second
 * window) and 5xx are retryable.
 */
import type { ResolvedDestination } from '@pipeline/tenancy';
import {
  deliverAll,
  type DeliveryLedger,
  type Endpoint,
  type ItemRejection,
  type Verdict,
} from '../../batch-delivery';
import { requiredText } from '../../destination-settings';
import type { Forwarder, OutboundEvent, SendOutcome, VendorClientOptions } from '../../forwarder';
import { sha256Hex } from '../../hashed-identity';
import {
  abortReason,
  callVendor,
  failureOfStatus,
  isRequestFailure,
  type VendorResponse,
} from '../../vendor-request';
import { hubspotContactOf, hubspotInputOf, type HubSpotInput, type PropertyTypes } from './hubspot-mapping';

const DEFAULT_HOST = 'https://api.hubapi.com';

/** 100 inputs per batch request (HubSpot); the byte cap is ours, HubSpot documents none. */
const limits = { maxItems: 100, maxBodyBytes: 4 * 1024 * 1024 };

/** HubSpot's rate windows are ten seconds long; it sends no Retry-After. */
const RATE_PAUSE_MS = 10_000;
const PROPERTIES_TTL_MS = 5 * 60_000;

/** Inputs of one email merged, later properties winning: HubSpot refuses an id twice per batch. */
function mergedInputs(items: readonly HubSpotInput[]): HubSpotInput[] {
  const byId = new Map<string, HubSpotInput>();
  for (const item of items) {
    const seen = byId.get(item.id);
    byId.set(item.id, seen ? { ...seen, properties: { ...seen.properties, ...item.properties } } : item);
  }
  return [...byId.values()];
}

function verdictOf(response: VendorResponse, items: readonly HubSpotInput[]): Verdict {
  if (response.status === 413) return { kind: 'too_large' };
  const body = (response.json ?? {}) as Record<string, unknown>;
  if (response.status === 400 && body.category === 'VALIDATION_ERROR') {
    // One invalid contact fails the whole batch, named only in the message: find it by halving.
    return { kind: 'isolate', failure: failureOfStatus(response) };
  }
  if (response.status < 200 || response.status >= 300)
    return { kind: 'failed', failure: failureOfStatus(response, { defaultRetryAfterMs: RATE_PAUSE_MS }) };
  if (response.status !== 207 || !Array.isArray(body.errors)) return { kind: 'accepted' };
  const rejected: ItemRejection[] = [];
  for (const error of body.errors as Record<string, unknown>[]) {
    const context = (error.context ?? {}) as Record<string, unknown>;
    const ids = Array.isArray(context.ids) ? context.ids.map((id) => String(id).toLowerCase()) : [];
    items.forEach((item, index) => {
      if (ids.includes(item.id))
        rejected.push({ index, reason: `rejected: ${String(error.category ?? 'error')}`, retryable: false });
    });
  }
  return { kind: 'accepted', rejected };
}

const propertyCache = new Map<string, { expires: number; types: PropertyTypes }>();

/** HubSpot CRM v3 contacts batch upsert. */
export class HubSpotForwarder implements Forwarder {
  readonly appType = 'hubspot';

  constructor(private readonly client: VendorClientOptions) {}

  /** The account's writable contact properties and their types, or undefined after halting the send. */
  private async propertyTypes(
    ledger: DeliveryLedger,
    baseUrl: string,
    token: string,
    signal?: AbortSignal,
  ): Promise<PropertyTypes | undefined> {
    // Keyed by a hash: the cache holds no token.
    const key = sha256Hex(`${baseUrl}\n${token}`);
    const cached = propertyCache.get(key);
    if (cached && cached.expires > Date.now()) return cached.types;
    const answer = await callVendor(
      { ...this.client, signal },
      {
        method: 'GET',
        url: `${baseUrl}/crm/v3/properties/contacts`,
        headers: { Authorization: `Bearer ${token}`, Accept: 'application/json' },
        body: '',
      },
    );
    ledger.noteRequest();
    if (isRequestFailure(answer)) return void ledger.halt(answer);
    if (answer.status < 200 || answer.status >= 300)
      return void ledger.halt(failureOfStatus(answer, { defaultRetryAfterMs: RATE_PAUSE_MS }));
    const results = (answer.json as { results?: unknown } | undefined)?.results;
    if (!Array.isArray(results))
      return void ledger.halt({ reason: 'invalid_response: no property list', retryable: true });
    const types = new Map<string, string>();
    for (const property of results as Record<string, unknown>[]) {
      const readOnly = (property.modificationMetadata as { readOnlyValue?: unknown } | undefined)
        ?.readOnlyValue;
      if (typeof property.name === 'string' && readOnly !== true)
        types.set(property.name, typeof property.type === 'string' ? property.type : 'string');
    }
    propertyCache.set(key, { expires: Date.now() + PROPERTIES_TTL_MS, types });
    return types;
  }

  send(
    destination: ResolvedDestination,
    events: readonly OutboundEvent[],
    signal?: AbortSignal,
  ): Promise<SendOutcome> {
    return deliverAll(this.appType, events, { ...this.client, signal }, async (ledger) => {
      const token = requiredText(destination.credentials, 'accessToken', 'credentials');
      const baseUrl = this.client.baseUrl ?? DEFAULT_HOST;
      const contacts = ledger.mapEvents((outbound) => {
        const contact = hubspotContactOf(outbound);
        return typeof contact === 'string' ? contact : [contact];
      });
      if (contacts.size === 0) return;
      if (signal?.aborted) return ledger.halt({ reason: abortReason(signal), retryable: true });
      const types = await this.propertyTypes(ledger, baseUrl, token, signal);
      if (!types) return;
      const mapped = new Map<number, HubSpotInput[]>();
      for (const [position, [contact]] of contacts) {
        if (!contact) continue;
        const input = ledger.tryMap(position, () => hubspotInputOf(contact.email, contact.raw, types));
        if (input) mapped.set(position, [input]);
      }
      const endpoint: Endpoint<HubSpotInput> = {
        limits,
        envelopeBytes: Buffer.byteLength(JSON.stringify({ inputs: [] })),
        request: (items) => ({
          method: 'POST',
          url: `${baseUrl}/crm/v3/objects/contacts/batch/upsert`,
          headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${token}` },
          body: JSON.stringify({ inputs: mergedInputs(items) }),
        }),
        verdict: verdictOf,
      };
      await ledger.deliver(endpoint, mapped);
    });
  }
}
