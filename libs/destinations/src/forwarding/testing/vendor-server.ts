import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ResolvedDestination } from '@pipeline/tenancy';
import { verifyWebhookSignature, webhookHeaders } from '../vendors/webhook/webhook-signature';

// Local look-alikes of each vendor's HTTP API, strict where the vendor's docs are (see
// /work/shared/notes/vendor-apis.md): a client that passes here sends what the vendor
// documents. Each answers bad auth and bad shapes with the vendor's own status and error body,
// records what it accepted, and can be told to fail, stall or reject items.

export type LookAlikeVendor =
  | 'amplitude'
  | 'mixpanel'
  | 'braze'
  | 'customer_io'
  | 'segment'
  | 'onesignal'
  | 'webhook'
  | 'hubspot'
  | 'meta_conversions'
  | 'google_ads';

export interface RecordedRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  headers: IncomingHttpHeaders;
  body: string;
  /** The status the server answered. */
  status: number;
}

/** An item (event, record, object, message, user update) the vendor took. */
export interface AcceptedItem {
  /** Which part of the API took it: '/2/httpapi', 'events', 'purchases', 'custom_events', ... */
  endpoint: string;
  item: Record<string, unknown>;
}

export interface ScriptedAnswer {
  status: number;
  /** The Retry-After header's value. */
  retryAfter?: string;
  headers?: Record<string, string>;
  /** Replaces the vendor's own error body for this status. */
  body?: unknown;
}

export interface LookAlikeServer {
  readonly vendor: LookAlikeVendor;
  /** The base URL to configure a forwarder with (the hook URL, for the webhook). */
  readonly url: string;
  readonly requests: RecordedRequest[];
  readonly accepted: AcceptedItem[];
  /** Items answered with success but not ingested (Segment drops what it cannot use). */
  readonly dropped: AcceptedItem[];
  /** The credentials this server accepts. */
  readonly credentials: Record<string, string>;
  /** Answers the next `times` requests with `answer`, before looking at them. */
  failNext(answer: ScriptedAnswer, times?: number): void;
  /** Lets the next `times` requests be handled normally, ahead of failures scripted after this. */
  passNext(times: number): void;
  /** Holds the answer of the next `times` requests for `ms`. */
  delayNext(ms: number, times?: number): void;
  /** From now on, the vendor reports the items matching `predicate` as failed, its own way. */
  rejectItems(predicate: (item: Record<string, unknown>, endpoint: string) => boolean, reason?: string): void;
  close(): Promise<void>;
}

/** The credentials each look-alike accepts unless told otherwise. */
export const lookAlikeCredentials: Record<LookAlikeVendor, Record<string, string>> = {
  amplitude: { apiKey: 'amp-test-key' },
  mixpanel: {
    projectToken: 'mp-test-token',
    serviceAccount: 'sa.test',
    secret: 'sa-secret',
    projectId: '31337',
  },
  braze: { apiKey: 'braze-test-key' },
  customer_io: { siteId: 'cio-site', apiKey: 'cio-key' },
  segment: { writeKey: 'seg-write-key' },
  onesignal: { appId: '5eb5a37e-b458-11e3-ac11-000c2940e62c', apiKey: 'os-app-key' },
  webhook: { signingSecret: 'whsec-test-secret' },
  hubspot: { accessToken: 'pat-na1-look-alike' },
  meta_conversions: { accessToken: 'EAAB-look-alike-token' },
  google_ads: {
    developerToken: 'dev-token-look-alike',
    clientId: 'look-alike.apps.googleusercontent.com',
    clientSecret: 'look-alike-client-secret',
    refreshToken: '1//look-alike-refresh-token',
  },
};

const destinationKinds: Record<LookAlikeVendor, ResolvedDestination['kind']> = {
  amplitude: 'product_analytics',
  mixpanel: 'product_analytics',
  braze: 'messaging',
  customer_io: 'messaging',
  segment: 'customer_data',
  onesignal: 'push',
  webhook: 'webhook',
  hubspot: 'customer_data',
  meta_conversions: 'advertising',
  google_ads: 'advertising',
};

/** The app config the newer look-alikes expect (the pixel and customer they know). */
const lookAlikeAppConfigs: Partial<Record<LookAlikeVendor, Record<string, unknown>>> = {
  meta_conversions: { pixelId: '1234567890' },
  google_ads: {
    customerId: '123-456-7890',
    conversionActions: { Clicked: '1001', 'Order Completed': '1002', 'Signed Up': '1003' },
  },
};

/**
 * A destination whose credentials and config this server accepts. Configure the forwarder
 * with `baseUrls: { [server.vendor]: server.url }` (the webhook's URL is in the config).
 */
export function lookAlikeDestination(
  server: LookAlikeServer,
  overrides: Partial<Pick<ResolvedDestination, 'credentials' | 'appConfig' | 'config'>> = {},
): ResolvedDestination {
  const credentials: Record<string, unknown> = { ...server.credentials };
  // The Mixpanel look-alike takes either; the project token is the simpler default.
  if (server.vendor === 'mixpanel') {
    delete credentials.serviceAccount;
    delete credentials.secret;
    delete credentials.projectId;
  }
  const appConfig: Record<string, unknown> =
    server.vendor === 'braze'
      ? { restEndpoint: 'https://rest.iad-01.braze.com' }
      : server.vendor === 'webhook'
        ? { url: server.url }
        : { ...(lookAlikeAppConfigs[server.vendor] ?? {}) };
  return {
    integrationId: `int-${server.vendor}`,
    kind: destinationKinds[server.vendor],
    appId: `app-${server.vendor}`,
    appType: server.vendor,
    dataType: 'events',
    config: { global: {}, tasks: [{ task_type: 'forward' }] },
    credentials,
    appConfig,
    ...overrides,
  };
}

interface Incoming {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
  body: string;
}

interface Answer {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

interface VendorState {
  expected: Record<string, string>;
  accept(endpoint: string, item: Record<string, unknown>): void;
  drop(endpoint: string, item: Record<string, unknown>): void;
  /** The scripted rejection of an item, if any. */
  rejection(item: Record<string, unknown>, endpoint: string): string | undefined;
}

type Handler = (incoming: Incoming, state: VendorState) => Answer;

const isObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);
const nonEmpty = (value: unknown): value is string => typeof value === 'string' && value.length > 0;
const bytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value), 'utf8');
const isIsoTime = (value: unknown) =>
  typeof value === 'string' && /^\d{4}-\d{2}-\d{2}T/.test(value) && !Number.isNaN(Date.parse(value));
const basic = (user: string, password: string) =>
  `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
const isJson = (incoming: Incoming) =>
  (incoming.headers['content-type'] ?? '').startsWith('application/json');

function parseJson(body: string): unknown {
  try {
    return JSON.parse(body);
  } catch {
    return undefined;
  }
}

// ---------------------------------------------------------------------------------------------
// Amplitude HTTP V2

const AMPLITUDE_MAX_BYTES = 1_000_000;
const amplitudePlaceholders = new Set([
  'null',
  'none',
  'nil',
  'undefined',
  '0',
  '-1',
  '00000000-0000-0000-0000-000000000000',
]);

const amplitude: Handler = (incoming, state) => {
  const fail = (error: string, extra: Record<string, unknown> = {}) => ({
    status: 400,
    body: { code: 400, error, ...extra },
  });
  if (incoming.method !== 'POST' || incoming.path !== '/2/httpapi') return fail('Invalid request path');
  if (!isJson(incoming)) return fail('Invalid JSON request body');
  if (Buffer.byteLength(incoming.body) >= AMPLITUDE_MAX_BYTES) {
    return { status: 413, body: { code: 413, error: 'Payload too large' } };
  }
  const body = parseJson(incoming.body);
  if (incoming.body.length === 0) return fail('Missing request body');
  if (!isObject(body)) return fail('Invalid JSON request body');
  if (!nonEmpty(body.api_key)) return fail('Request missing required field', { missing_field: 'api_key' });
  if (body.api_key !== state.expected.apiKey) return fail('Invalid API key');
  if (!Array.isArray(body.events) || body.events.length === 0) {
    return fail('Request missing required field', { missing_field: 'events' });
  }
  if (body.events.length > 2000) return { status: 413, body: { code: 413, error: 'Payload too large' } };
  const options = isObject(body.options) ? body.options : {};
  const minIdLength = Number.isInteger(options.min_id_length) ? (options.min_id_length as number) : 5;
  const invalid: Record<string, number[]> = {};
  const missing: Record<string, number[]> = {};
  const note = (into: Record<string, number[]>, field: string, index: number) =>
    (into[field] ??= []).push(index);
  const idOk = (id: unknown) =>
    nonEmpty(id) && id.length >= minIdLength && !amplitudePlaceholders.has(id.toLowerCase());
  body.events.forEach((event: unknown, index: number) => {
    if (!isObject(event)) return note(invalid, 'event', index);
    if (!nonEmpty(event.event_type)) note(missing, 'event_type', index);
    if (!idOk(event.user_id) && !idOk(event.device_id)) note(missing, 'user_id', index);
    if (event.time !== undefined && !Number.isInteger(event.time)) note(invalid, 'time', index);
    if (event.session_id !== undefined && !Number.isInteger(event.session_id))
      note(invalid, 'session_id', index);
    if (event.event_type === '$identify' && event.event_properties !== undefined)
      note(invalid, 'event_properties', index);
    for (const field of ['event_properties', 'user_properties', 'groups']) {
      if (event[field] !== undefined && !isObject(event[field])) note(invalid, field, index);
    }
    const rejection = state.rejection(event, '/2/httpapi');
    if (rejection) note(invalid, rejection, index);
  });
  if (Object.keys(invalid).length > 0 || Object.keys(missing).length > 0) {
    return fail(
      Object.keys(missing).length > 0
        ? 'Request missing required field'
        : 'Invalid field values on some events',
      {
        events_with_invalid_fields: invalid,
        events_with_missing_fields: missing,
      },
    );
  }
  for (const event of body.events as Record<string, unknown>[]) state.accept('/2/httpapi', event);
  return {
    status: 200,
    body: {
      code: 200,
      events_ingested: body.events.length,
      payload_size_bytes: Buffer.byteLength(incoming.body),
      server_upload_time: Date.now(),
    },
  };
};

// ---------------------------------------------------------------------------------------------
// Mixpanel import

/** The stricter of the two documented limits (see mixpanel-forwarder.ts). */
const MIXPANEL_MAX_BYTES = 2 * 1024 * 1024;
const mixpanelPlaceholders = new Set([
  'anon',
  'anonymous',
  'null',
  'undefined',
  'none',
  'nil',
  '0',
  '-1',
  'lmy47d',
]);

const mixpanel: Handler = (incoming, state) => {
  const fail = (status: number, error: string, statusText: string, extra: Record<string, unknown> = {}) => ({
    status,
    body: { code: status, error, status: statusText, ...extra },
  });
  if (incoming.method !== 'POST' || incoming.path !== '/import') return fail(404, 'not found', 'Not Found');
  const { projectToken, serviceAccount, secret, projectId } = state.expected;
  const authorization = incoming.headers.authorization;
  const projectQuery = incoming.query.get('project_id');
  const byAccount =
    authorization === basic(serviceAccount ?? '', secret ?? '') &&
    projectQuery !== null &&
    projectQuery === projectId;
  const byToken = authorization === basic(projectToken ?? '', '') && projectQuery === null;
  if (!byAccount && !byToken) return fail(401, 'Invalid credentials', 'Unauthorized');
  const type = incoming.headers['content-type'] ?? '';
  if (!type.startsWith('application/json') && !type.startsWith('application/x-ndjson')) {
    return fail(400, 'unsupported Content-Type', 'Bad Request');
  }
  if (Buffer.byteLength(incoming.body) > MIXPANEL_MAX_BYTES) {
    return fail(413, `request exceeds max limit of ${MIXPANEL_MAX_BYTES} bytes`, 'Request Entity Too Large');
  }
  const body = type.startsWith('application/x-ndjson')
    ? incoming.body
        .split('\n')
        .filter((line) => line.trim())
        .map(parseJson)
    : parseJson(incoming.body);
  if (!Array.isArray(body)) return fail(400, 'body must be a JSON array of events', 'Bad Request');
  if (body.length > 2000) return fail(400, 'too many events in one request (max 2000)', 'Bad Request');
  const failed: Record<string, unknown>[] = [];
  const accepted: Record<string, unknown>[] = [];
  const now = Date.now();
  body.forEach((record: unknown, index: number) => {
    const problem = (field: string, message: string) => {
      const insertId =
        isObject(record) && isObject(record.properties) ? record.properties.$insert_id : undefined;
      failed.push({ index, $insert_id: insertId, field, message });
    };
    if (!isObject(record) || !isObject(record.properties))
      return problem('properties', 'properties must be an object');
    const { properties } = record;
    if (!nonEmpty(record.event)) return problem('event', "'event' must be a non-empty string");
    if (typeof properties.time !== 'number')
      return problem('properties.time', "'properties.time' is required");
    const timeMs = properties.time < 1e11 ? properties.time * 1000 : properties.time;
    if (timeMs < Date.UTC(1971, 0, 1) || timeMs > now + 3_600_000) {
      return problem('properties.time', "'properties.time' is before 1971 or more than 1 hour in the future");
    }
    if (typeof properties.distinct_id !== 'string') {
      return problem('properties.distinct_id', "'properties.distinct_id' is required");
    }
    if (mixpanelPlaceholders.has(properties.distinct_id.toLowerCase())) {
      return problem('properties.distinct_id', "'properties.distinct_id' is a placeholder value");
    }
    if (typeof properties.$insert_id !== 'string' || !/^[A-Za-z0-9-]{1,36}$/.test(properties.$insert_id)) {
      return problem(
        'properties.$insert_id',
        "'properties.$insert_id' must be ≤36 bytes of alphanumerics and '-'",
      );
    }
    const rejection = state.rejection(record, '/import');
    if (rejection) return problem('properties', rejection);
    accepted.push(record);
  });
  for (const record of accepted) state.accept('/import', record);
  if (failed.length > 0) {
    return fail(400, 'some data points in the request failed validation', 'Bad Request', {
      num_records_imported: accepted.length,
      failed_records: failed,
    });
  }
  return { status: 200, body: { code: 200, num_records_imported: accepted.length, status: 'OK' } };
};

// ---------------------------------------------------------------------------------------------
// Braze /users/track

/** email and phone identify a user only when none of these is given; otherwise they are attributes. */
const brazeIdentifiers = ['external_id', 'user_alias', 'braze_id'];

function brazeObjectProblem(array: string, object: Record<string, unknown>): string | undefined {
  const identifiers = brazeIdentifiers.filter((key) => object[key] !== undefined);
  if (identifiers.length > 1) return 'Objects must have exactly one identifier';
  if (identifiers.length === 0 && !nonEmpty(object.email) && !nonEmpty(object.phone)) {
    return 'Objects must have an external_id, user_alias, braze_id, email or phone';
  }
  if (object.user_alias !== undefined) {
    const alias = object.user_alias;
    if (!isObject(alias) || !nonEmpty(alias.alias_name) || !nonEmpty(alias.alias_label)) {
      return 'user_alias needs alias_name and alias_label';
    }
    if (object._update_existing_only !== false) return 'alias-only profiles need _update_existing_only false';
  }
  if (array === 'events') {
    if (!nonEmpty(object.name)) return 'Event name is required';
    if (!isIsoTime(object.time)) return 'Event time must be an ISO 8601 string';
    if (object.properties !== undefined && !isObject(object.properties))
      return 'Event properties must be an object';
  }
  if (array === 'purchases') {
    if (!nonEmpty(object.product_id)) return 'product_id is required';
    if (typeof object.currency !== 'string' || !/^[A-Z]{3}$/.test(object.currency)) {
      return 'currency must be an ISO 4217 code';
    }
    if (typeof object.price !== 'number') return 'price must be a number';
    if (!isIsoTime(object.time)) return 'Purchase time must be an ISO 8601 string';
    if (
      object.quantity !== undefined &&
      (!Number.isInteger(object.quantity) || (object.quantity as number) > 100)
    ) {
      return 'quantity must be an integer of at most 100';
    }
  }
  return undefined;
}

const braze: Handler = (incoming, state) => {
  if (incoming.method !== 'POST' || incoming.path !== '/users/track') {
    return { status: 404, body: { message: 'Not Found' } };
  }
  if (incoming.headers.authorization !== `Bearer ${state.expected.apiKey}`) {
    return { status: 401, body: { message: 'Unauthorized: unknown or missing REST API key' } };
  }
  if (!isJson(incoming)) return { status: 400, body: { message: 'Content-Type must be application/json' } };
  const body = parseJson(incoming.body);
  if (!isObject(body)) return { status: 400, body: { message: 'Invalid JSON body', errors: [] } };
  const arrays = ['attributes', 'events', 'purchases'] as const;
  let total = 0;
  for (const array of arrays) {
    const value = body[array];
    if (value === undefined) continue;
    if (!Array.isArray(value))
      return { status: 400, body: { message: `${array} must be an array`, errors: [] } };
    total += value.length;
  }
  if (total === 0)
    return { status: 400, body: { message: 'No attributes, events or purchases', errors: [] } };
  if (total > 75) return { status: 400, body: { message: 'Max Input Length Exceeded', errors: [] } };
  const errors: Record<string, unknown>[] = [];
  const processed = { attributes: 0, events: 0, purchases: 0 };
  for (const array of arrays) {
    const objects = (body[array] ?? []) as unknown[];
    objects.forEach((object, index) => {
      const problem = isObject(object)
        ? (brazeObjectProblem(array, object) ?? state.rejection(object, array))
        : 'Object expected';
      if (problem) errors.push({ type: problem, input_array: array, index });
      else {
        processed[array] += 1;
        state.accept(array, object as Record<string, unknown>);
      }
    });
  }
  return {
    status: 201,
    body: {
      message: 'success',
      attributes_processed: processed.attributes,
      events_processed: processed.events,
      purchases_processed: processed.purchases,
      ...(errors.length > 0 ? { errors } : {}),
    },
  };
};

// ---------------------------------------------------------------------------------------------
// Customer.io Track v2

const CIO_MAX_BATCH_BYTES = 500 * 1024;
const CIO_MAX_ITEM_BYTES = 32 * 1024;
const ULID = /^[0-9A-HJKMNP-TV-Z]{26}$/;
const cioPersonActions = new Set([
  'identify',
  'delete',
  'event',
  'screen',
  'page',
  'add_relationships',
  'delete_relationships',
  'add_device',
  'delete_device',
  'merge',
  'suppress',
  'unsuppress',
]);
const cioObjectActions = new Set([
  'identify',
  'identify_anonymous',
  'delete',
  'add_relationships',
  'delete_relationships',
]);

function cioItemProblem(item: Record<string, unknown>): { field: string; message: string } | undefined {
  if (bytes(item) > CIO_MAX_ITEM_BYTES)
    return { field: '', message: 'each request in a batch must be 32kb or smaller' };
  const identifiers = item.identifiers;
  if (item.type === 'person') {
    if (!cioPersonActions.has(String(item.action))) return { field: 'action', message: 'unknown action' };
    if (!isObject(identifiers)) return { field: 'identifiers', message: 'identifiers are required' };
    const keys = Object.keys(identifiers);
    if (keys.length !== 1 || !['id', 'email', 'phone', 'cio_id'].includes(keys[0] ?? '')) {
      return { field: 'identifiers', message: 'exactly one of id, email, phone or cio_id' };
    }
    const id = identifiers[keys[0] ?? ''];
    if (!nonEmpty(id) || Buffer.byteLength(id) > 150) {
      return { field: 'identifiers', message: 'identifier must be 1 to 150 bytes' };
    }
    if (['event', 'page', 'screen'].includes(String(item.action))) {
      if (!nonEmpty(item.name)) return { field: 'name', message: 'name is required' };
      if (Buffer.byteLength(item.name) > 100)
        return { field: 'name', message: 'name must be 100 bytes or fewer' };
      if (item.id !== undefined && (typeof item.id !== 'string' || !ULID.test(item.id))) {
        return { field: 'id', message: 'id must be a valid ULID' };
      }
    }
  } else if (item.type === 'object') {
    if (!cioObjectActions.has(String(item.action))) return { field: 'action', message: 'unknown action' };
    if (!isObject(identifiers) || !nonEmpty(identifiers.object_type_id) || !nonEmpty(identifiers.object_id)) {
      return { field: 'identifiers', message: 'object_type_id and object_id are required' };
    }
    if (!/^\d+$/.test(identifiers.object_type_id)) {
      return { field: 'identifiers.object_type_id', message: 'must be a string-formatted integer' };
    }
  } else {
    return { field: 'type', message: 'type must be person or object' };
  }
  if (item.timestamp !== undefined && !Number.isInteger(item.timestamp)) {
    return { field: 'timestamp', message: 'timestamp must be a unix timestamp in seconds' };
  }
  if (item.attributes !== undefined && !isObject(item.attributes)) {
    return { field: 'attributes', message: 'attributes must be an object' };
  }
  return undefined;
}

const customerIo: Handler = (incoming, state) => {
  if (incoming.method !== 'POST' || incoming.path !== '/api/v2/batch') {
    return { status: 404, body: { errors: [{ reason: 'not_found', message: 'no such endpoint' }] } };
  }
  if (incoming.headers.authorization !== basic(state.expected.siteId ?? '', state.expected.apiKey ?? '')) {
    return { status: 401, body: undefined };
  }
  const whole = (message: string, field = 'batch') => ({
    status: 400,
    body: { errors: [{ reason: 'invalid', field, message }] },
  });
  if (!isJson(incoming)) return whole('Content-Type must be application/json', '');
  if (Buffer.byteLength(incoming.body) >= CIO_MAX_BATCH_BYTES)
    return whole('batch must be smaller than 500kb');
  const body = parseJson(incoming.body);
  if (!isObject(body) || !Array.isArray(body.batch)) return whole('batch must be an array');
  const errors: Record<string, unknown>[] = [];
  body.batch.forEach((item: unknown, index: number) => {
    const problem = isObject(item) ? cioItemProblem(item) : { field: '', message: 'object expected' };
    const rejection = !problem && isObject(item) ? state.rejection(item, 'batch') : undefined;
    if (problem) errors.push({ batch_index: index, reason: 'invalid', ...problem });
    else if (rejection)
      errors.push({ batch_index: index, reason: 'invalid', field: 'attributes', message: rejection });
    else state.accept('batch', item as Record<string, unknown>);
  });
  return errors.length > 0 ? { status: 207, body: { errors } } : { status: 200, body: {} };
};

// ---------------------------------------------------------------------------------------------
// Segment HTTP tracking API

const SEGMENT_MAX_BATCH_BYTES = 500 * 1024;
const SEGMENT_MAX_MESSAGE_BYTES = 32 * 1024;
const segmentTypes = new Set(['identify', 'track', 'page', 'screen', 'group', 'alias']);

/** What makes Segment drop a message while still answering 200 (seen only in its Debugger). */
function segmentMessageProblem(message: Record<string, unknown>): string | undefined {
  if (!segmentTypes.has(String(message.type))) return 'unknown type';
  if (!nonEmpty(message.userId) && !nonEmpty(message.anonymousId)) return 'userId or anonymousId is required';
  if (message.type === 'track' && !nonEmpty(message.event)) return 'event is required';
  if (message.type === 'group' && !nonEmpty(message.groupId)) return 'groupId is required';
  if (message.type === 'alias' && (!nonEmpty(message.previousId) || !nonEmpty(message.userId))) {
    return 'previousId and userId are required';
  }
  if (!nonEmpty(message.messageId) || message.messageId.length >= 100)
    return 'messageId must be under 100 chars';
  if (message.timestamp !== undefined && !isIsoTime(message.timestamp)) return 'timestamp must be ISO 8601';
  return undefined;
}

const segment: Handler = (incoming, state) => {
  // Segment's documented answer to every request it can read is 200; an unknown write key is
  // refused here (401) so that a client sending the wrong one fails a test instead of passing.
  if (incoming.method !== 'POST' || incoming.path !== '/v1/batch') {
    return { status: 404, body: { success: false, message: 'not found' } };
  }
  if (incoming.headers.authorization !== basic(state.expected.writeKey ?? '', '')) {
    return { status: 401, body: { success: false, message: 'invalid write key' } };
  }
  if (Buffer.byteLength(incoming.body) > SEGMENT_MAX_BATCH_BYTES) {
    return { status: 400, body: { success: false, message: 'batch exceeds 500KB' } };
  }
  const body = parseJson(incoming.body);
  if (!isJson(incoming) || !isObject(body) || !Array.isArray(body.batch)) {
    return { status: 400, body: { success: false, message: 'invalid JSON' } };
  }
  if (body.batch.some((message: unknown) => bytes(message) > SEGMENT_MAX_MESSAGE_BYTES)) {
    return { status: 400, body: { success: false, message: 'message exceeds 32KB' } };
  }
  (body.batch as unknown[]).forEach((message, index) => {
    const record = isObject(message) ? message : {};
    // Beyond 2500 messages Segment answers 200 and drops the rest.
    const problem = index >= 2500 ? 'batch over 2500 messages' : segmentMessageProblem(record);
    const rejection = problem ?? state.rejection(record, 'batch');
    if (rejection) state.drop('batch', record);
    else state.accept('batch', record);
  });
  return { status: 200, body: { success: true } };
};

// ---------------------------------------------------------------------------------------------
// OneSignal

const ONESIGNAL_MAX_REQUEST_BYTES = 1_000_000;
const ONESIGNAL_MAX_EVENT_BYTES = 2024;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function oneSignalEventProblem(event: Record<string, unknown>): string | undefined {
  if (bytes(event) > ONESIGNAL_MAX_EVENT_BYTES) return 'event exceeds 2024 bytes';
  if (!nonEmpty(event.name) || event.name.length > 128) return 'name is required, at most 128 characters';
  if (!nonEmpty(event.external_id) && !nonEmpty(event.onesignal_id))
    return 'external_id or onesignal_id is required';
  if (event.timestamp !== undefined && !isIsoTime(event.timestamp)) return 'timestamp must be ISO 8601';
  if (
    event.idempotency_key !== undefined &&
    (typeof event.idempotency_key !== 'string' || !UUID.test(event.idempotency_key))
  ) {
    return 'idempotency_key must be a UUID';
  }
  if (event.properties !== undefined && !isObject(event.properties)) return 'properties must be an object';
  return undefined;
}

function oneSignalPropertiesProblem(properties: Record<string, unknown>): string | undefined {
  const { tags, language, country } = properties;
  if (tags !== undefined) {
    if (!isObject(tags)) return 'tags must be an object';
    if (Object.keys(tags).length > 100) return 'at most 100 property updates per request';
    if (Object.values(tags).some((value) => typeof value !== 'string')) return 'tag values must be strings';
  }
  if (language !== undefined && (typeof language !== 'string' || !/^[a-z]{2}$/.test(language))) {
    return 'language must be ISO 639-1, lowercase';
  }
  if (country !== undefined && (typeof country !== 'string' || !/^[A-Z]{2}$/.test(country))) {
    return 'country must be ISO 3166-1 alpha-2, uppercase';
  }
  return undefined;
}

const oneSignal: Handler = (incoming, state) => {
  const authorized = incoming.headers.authorization === `Key ${state.expected.apiKey}`;
  const userPath = incoming.path.match(/^\/apps\/([^/]+)\/users\/by\/([^/]+)\/([^/]+)$/);

  if (incoming.method === 'PATCH' && userPath) {
    const fail = (status: number, code: string, title: string) => ({
      status,
      body: { errors: [{ code, title }] },
    });
    if (!authorized)
      return fail(401, 'auth-1', 'Please include a case-sensitive header of Authorization: Key <API-KEY>');
    if (userPath[1] !== state.expected.appId) return fail(404, 'app-not-found', 'App not found');
    const body = parseJson(incoming.body);
    if (!isJson(incoming) || !isObject(body)) return fail(400, 'invalid-json', 'Invalid JSON body');
    if (!isObject(body.properties)) return fail(400, 'invalid-properties', 'properties must be an object');
    const problem = oneSignalPropertiesProblem(body.properties);
    if (problem) return fail(400, 'invalid-properties', problem);
    const item = {
      alias_label: decodeURIComponent(userPath[2] ?? ''),
      alias_id: decodeURIComponent(userPath[3] ?? ''),
      ...body,
    };
    const rejection = state.rejection(item, 'update_user');
    if (rejection) return fail(400, 'rejected', rejection);
    state.accept('update_user', item);
    return { status: 202, body: { properties: body.properties } };
  }

  const eventsPath = incoming.path.match(/^\/apps\/([^/]+)\/custom_events$/);
  if (incoming.method === 'POST' && eventsPath) {
    // This endpoint answers 401 and 429 with empty text bodies, 400 with {}.
    if (!authorized) return { status: 401, body: '' };
    if (eventsPath[1] !== state.expected.appId) return { status: 404, body: {} };
    if (Buffer.byteLength(incoming.body) > ONESIGNAL_MAX_REQUEST_BYTES) return { status: 400, body: {} };
    const body = parseJson(incoming.body);
    if (!isJson(incoming) || !isObject(body) || !Array.isArray(body.events) || body.events.length === 0) {
      return { status: 400, body: {} };
    }
    const events = body.events as unknown[];
    if (events.some((event) => !isObject(event) || oneSignalEventProblem(event)))
      return { status: 400, body: {} };
    const errors: Record<string, unknown>[] = [];
    for (const event of events as Record<string, unknown>[]) {
      const rejection = state.rejection(event, 'custom_events');
      if (rejection) {
        errors.push({
          event_user_id: event.external_id,
          event_id: event.idempotency_key,
          error: { code: 'user-not-found', title: rejection },
        });
      } else state.accept('custom_events', event);
    }
    return { status: 202, body: errors.length > 0 ? { errors } : {} };
  }
  return { status: 404, body: { errors: [{ code: 'not-found', title: 'Not Found' }] } };
};

// ---------------------------------------------------------------------------------------------
// Webhook receiver

const webhook: Handler = (incoming, state) => {
  if (incoming.method !== 'POST') return { status: 405, body: { error: 'POST only' } };
  const valid = verifyWebhookSignature({
    secret: state.expected.signingSecret ?? '',
    body: incoming.body,
    timestamp: incoming.headers[webhookHeaders.timestamp.toLowerCase()] as string | undefined,
    signature: incoming.headers[webhookHeaders.signature.toLowerCase()] as string | undefined,
  });
  if (!valid) return { status: 401, body: { error: 'invalid signature' } };
  const body = parseJson(incoming.body);
  if (!isJson(incoming) || !isObject(body) || !Array.isArray(body.batch)) {
    return { status: 400, body: { error: 'expected {"batch": [...]}' } };
  }
  for (const message of body.batch as unknown[]) if (isObject(message)) state.accept('batch', message);
  return { status: 200, body: { ok: true } };
};

// ---------------------------------------------------------------------------------------------
// HubSpot CRM v3: contact properties and contacts batch upsert

/** The account's contact properties: HubSpot's usual ones and a few custom ones. */
export const hubspotLookAlikeProperties: Record<string, { type: string; readOnly?: boolean }> = {
  email: { type: 'string' },
  firstname: { type: 'string' },
  lastname: { type: 'string' },
  phone: { type: 'string' },
  company: { type: 'string' },
  jobtitle: { type: 'string' },
  website: { type: 'string' },
  address: { type: 'string' },
  city: { type: 'string' },
  state: { type: 'string' },
  zip: { type: 'string' },
  country: { type: 'string' },
  plan_type: { type: 'string' },
  favorite_color: { type: 'enumeration' },
  seats: { type: 'number' },
  is_trial: { type: 'bool' },
  renewal_date: { type: 'date' },
  hs_object_id: { type: 'number', readOnly: true },
  lastmodifieddate: { type: 'datetime', readOnly: true },
};

const HUBSPOT_MAX_INPUTS = 100;
const HUBSPOT_MAX_VALUE = 65_536;
const LOOSE_EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

function hubspotInputProblem(input: unknown): { error: string; message: string; name?: string } | undefined {
  if (!isObject(input)) return { error: 'INVALID_INPUT', message: 'each input must be an object' };
  if (input.idProperty !== 'email')
    return { error: 'INVALID_ID_PROPERTY', message: 'idProperty must be a unique property (email)' };
  if (typeof input.id !== 'string' || !LOOSE_EMAIL.test(input.id))
    return { error: 'INVALID_EMAIL', message: `Email address ${String(input.id)} is invalid` };
  if (!isObject(input.properties)) return { error: 'INVALID_INPUT', message: 'properties must be an object' };
  for (const [name, value] of Object.entries(input.properties)) {
    const property = Object.hasOwn(hubspotLookAlikeProperties, name)
      ? hubspotLookAlikeProperties[name]
      : undefined;
    if (!property)
      return { error: 'PROPERTY_DOESNT_EXIST', message: `Property "${name}" does not exist`, name };
    if (property.readOnly)
      return {
        error: 'READ_ONLY_VALUE',
        message: `"${name}" is a read only property; its value cannot be set.`,
        name,
      };
    if (typeof value !== 'string')
      return { error: 'INVALID_PROPERTY_VALUE', message: `${name} must be a string`, name };
    if (value.length > HUBSPOT_MAX_VALUE)
      return {
        error: 'INVALID_PROPERTY_VALUE',
        message: `${name} is longer than ${HUBSPOT_MAX_VALUE}`,
        name,
      };
    if (
      property.type === 'date' &&
      value !== '' &&
      !/^\d{4}-\d{2}-\d{2}$/.test(value) &&
      !/^\d+$/.test(value)
    )
      return { error: 'INVALID_DATE', message: `${value} is not a valid date for ${name}`, name };
    if (name === 'email' && value.toLowerCase() !== String(input.id).toLowerCase())
      return { error: 'INVALID_INPUT', message: 'email differs from the id', name };
  }
  return undefined;
}

const hubspot: Handler = (incoming, state) => {
  const fail = (status: number, category: string, message: string, extra: Record<string, unknown> = {}) => ({
    status,
    body: {
      status: 'error',
      message,
      correlationId: '00000000-0000-4000-8000-000000000000',
      category,
      ...extra,
    },
  });
  if (incoming.headers.authorization !== `Bearer ${state.expected.accessToken}`)
    return fail(
      401,
      'INVALID_AUTHENTICATION',
      'Authentication credentials not found. This API supports OAuth 2.0 authentication.',
    );
  if (incoming.method === 'GET' && incoming.path === '/crm/v3/properties/contacts') {
    return {
      status: 200,
      body: {
        results: Object.entries(hubspotLookAlikeProperties).map(([name, p]) => ({
          name,
          label: name,
          type: p.type,
          fieldType: 'text',
          modificationMetadata: {
            archivable: true,
            readOnlyDefinition: true,
            readOnlyValue: p.readOnly === true,
          },
        })),
      },
    };
  }
  if (incoming.method !== 'POST' || incoming.path !== '/crm/v3/objects/contacts/batch/upsert')
    return fail(404, 'OBJECT_NOT_FOUND', 'Resource not found');
  const body = parseJson(incoming.body);
  if (!isJson(incoming) || !isObject(body) || !Array.isArray(body.inputs))
    return fail(400, 'VALIDATION_ERROR', 'Invalid input JSON on line 1');
  if (body.inputs.length === 0 || body.inputs.length > HUBSPOT_MAX_INPUTS)
    return fail(400, 'VALIDATION_ERROR', `inputs must have between 1 and ${HUBSPOT_MAX_INPUTS} items`);
  const ids = new Set<string>();
  for (const input of body.inputs as unknown[]) {
    const problem = hubspotInputProblem(input);
    if (problem)
      return fail(400, 'VALIDATION_ERROR', `Property values were not valid: ${JSON.stringify([problem])}`);
    const id = String((input as Record<string, unknown>).id).toLowerCase();
    if (ids.has(id)) return fail(400, 'VALIDATION_ERROR', `Duplicate IDs found in batch input: [${id}]`);
    ids.add(id);
  }
  const errors: Record<string, unknown>[] = [];
  const results: Record<string, unknown>[] = [];
  for (const input of body.inputs as Record<string, unknown>[]) {
    const rejection = state.rejection(input, 'contacts/batch/upsert');
    if (rejection) {
      errors.push({
        status: 'error',
        category: 'VALIDATION_ERROR',
        message: rejection,
        context: { ids: [input.id] },
      });
      continue;
    }
    state.accept('contacts/batch/upsert', input);
    const now = new Date().toISOString();
    results.push({
      id: String(results.length + 1),
      properties: input.properties,
      createdAt: now,
      updatedAt: now,
      archived: false,
      new: true,
    });
  }
  const when = new Date().toISOString();
  return {
    status: errors.length > 0 ? 207 : 200,
    body: {
      status: 'COMPLETE',
      results,
      ...(errors.length > 0 ? { numErrors: errors.length, errors } : {}),
      requestedAt: when,
      startedAt: when,
      completedAt: when,
    },
  };
};

// ---------------------------------------------------------------------------------------------
// Meta Conversions API (Graph API /{version}/{pixel_id}/events)

/** The pixel (dataset) id the look-alike knows. */
export const META_LOOKALIKE_PIXEL = '1234567890';
const META_MAX_EVENTS = 1000;
const META_MAX_AGE_S = 7 * 86_400;
const metaActionSources = new Set([
  'email',
  'website',
  'app',
  'phone_call',
  'chat',
  'physical_store',
  'system_generated',
  'business_messaging',
  'other',
]);
const HASHED = /^[0-9a-f]{64}$/;
const metaHashedKeys = ['em', 'ph', 'fn', 'ln', 'ge', 'db', 'ct', 'st', 'zp', 'country', 'external_id'];

function metaEventProblem(event: unknown, now: number): string | undefined {
  if (!isObject(event)) return 'each event must be an object';
  if (!nonEmpty(event.event_name)) return 'event_name is required';
  if (!Number.isInteger(event.event_time)) return 'event_time must be a unix timestamp in seconds';
  const time = event.event_time as number;
  if (time > now + 60 * 60 * 24 * 365 * 10 || time > now + 60) return 'event_time must not be in the future';
  if (now - time > META_MAX_AGE_S)
    return 'The timestamp for this event is more than 7 days in the past (event_time)';
  if (!nonEmpty(event.action_source) || !metaActionSources.has(event.action_source))
    return 'action_source must be one of the documented sources';
  if (!isObject(event.user_data)) return 'user_data is required';
  const user = event.user_data;
  for (const key of metaHashedKeys) {
    const value = user[key];
    if (value === undefined) continue;
    const values = Array.isArray(value) ? value : [value];
    if (values.length === 0 || values.some((v) => typeof v !== 'string' || !HASHED.test(v)))
      return `user_data.${key} must be SHA-256 hashed (lowercase hex)`;
  }
  if (
    user.client_ip_address !== undefined &&
    (typeof user.client_ip_address !== 'string' || !/^[0-9a-fA-F.:]+$/.test(user.client_ip_address))
  )
    return 'user_data.client_ip_address must be an IPv4 or IPv6 address';
  if (event.action_source === 'website') {
    if (!nonEmpty(user.client_user_agent)) return 'client_user_agent is required for website events';
    if (!nonEmpty(event.event_source_url)) return 'event_source_url is required for website events';
  }
  if (!['em', 'ph', 'external_id', 'fbc', 'fbp', 'client_ip_address'].some((k) => user[k] !== undefined))
    return 'user_data must hold at least one customer information parameter';
  if (event.custom_data !== undefined) {
    if (!isObject(event.custom_data)) return 'custom_data must be an object';
    const { value, currency } = event.custom_data;
    if (value !== undefined && (typeof value !== 'number' || !Number.isFinite(value)))
      return 'custom_data.value must be a number';
    if (currency !== undefined && (typeof currency !== 'string' || !/^[A-Za-z]{3}$/.test(currency)))
      return 'custom_data.currency must be an ISO 4217 code';
  }
  if (event.event_name === 'Purchase') {
    const custom = isObject(event.custom_data) ? event.custom_data : {};
    if (custom.value === undefined || custom.currency === undefined)
      return 'custom_data.value and custom_data.currency are required for Purchase events';
  }
  return undefined;
}

const metaConversions: Handler = (incoming, state) => {
  const graphError = (message: string, code: number, extra: Record<string, unknown> = {}) => ({
    status: 400,
    body: { error: { message, type: 'OAuthException', code, fbtrace_id: 'ALookAlikeTrace', ...extra } },
  });
  const path = incoming.path.match(/^\/(v\d+\.\d+)\/([^/]+)\/events$/);
  if (incoming.method !== 'POST' || !path) return graphError('Unknown path components', 2500);
  const body = parseJson(incoming.body);
  const token = (isObject(body) ? body.access_token : undefined) ?? incoming.query.get('access_token');
  if (!nonEmpty(token)) return graphError('An access token is required to request this resource.', 104);
  if (token !== state.expected.accessToken)
    return graphError('Invalid OAuth access token - Cannot parse access token', 190);
  if (path[2] !== META_LOOKALIKE_PIXEL)
    return graphError(
      `Unsupported post request. Object with ID '${path[2]}' does not exist, cannot be loaded due to missing permissions, or does not support this operation.`,
      100,
      { error_subcode: 33, type: 'GraphMethodException' },
    );
  if (!isJson(incoming) || !isObject(body) || !Array.isArray(body.data) || body.data.length === 0)
    return graphError('(#100) The parameter data is required', 100);
  if (body.data.length > META_MAX_EVENTS)
    return graphError(`(#100) data: at most ${META_MAX_EVENTS} events per request`, 100);
  if (body.test_event_code !== undefined && !nonEmpty(body.test_event_code))
    return graphError('(#100) test_event_code must be a string', 100);
  const now = Math.floor(Date.now() / 1000);
  for (const [index, event] of (body.data as unknown[]).entries()) {
    const problem =
      metaEventProblem(event, now) ?? state.rejection(event as Record<string, unknown>, 'events');
    // One invalid event fails the whole request: Meta processes none of it.
    if (problem)
      return graphError('Invalid parameter', 100, {
        error_subcode: 2804003,
        is_transient: false,
        error_user_title: 'Invalid event',
        error_user_msg: `data[${index}]: ${problem}`,
      });
  }
  for (const event of body.data as Record<string, unknown>[])
    state.accept(body.test_event_code ? 'test_events' : 'events', event);
  return {
    status: 200,
    body: { events_received: body.data.length, messages: [], fbtrace_id: 'ALookAlikeTrace' },
  };
};

// ---------------------------------------------------------------------------------------------
// Google: OAuth token endpoint and Google Ads ConversionUploadService.UploadClickConversions

/** The customer the Google Ads look-alike knows. */
export const GOOGLE_ADS_LOOKALIKE_CUSTOMER = '1234567890';
const GOOGLE_ADS_MAX_CONVERSIONS = 2000;
const GOOGLE_DATE_TIME = /^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})(?:\.\d+)?([+-]\d{2}:\d{2})$/;
/** Google keeps clicks for conversions for at most 90 days. */
const GOOGLE_MAX_CLICK_AGE_MS = 90 * 86_400_000;

/** The access token the look-alike issues for a refresh token: the same each time. */
const googleAccessToken = (refreshToken: string) =>
  `ya29.lookalike-${Buffer.from(refreshToken).toString('base64url').slice(0, 16)}`;

function googleConversionProblem(
  conversion: unknown,
  customer: string,
  now: number,
): [string, string, string] | undefined {
  // [error group, code, message]
  if (!isObject(conversion)) return ['requestError', 'INVALID_INPUT', 'conversion must be an object'];
  const clickIds = ['gclid', 'gbraid', 'wbraid'].filter((k) => conversion[k] !== undefined);
  const identifiers = conversion.userIdentifiers;
  if (clickIds.length > 1)
    return ['conversionUploadError', 'GBRAID_WBRAID_BOTH_SET', 'at most one of gclid, gbraid, wbraid'];
  if (clickIds.length === 1 && identifiers !== undefined)
    return ['conversionUploadError', 'CONVERSION_NOT_FOUND', 'a click id and user identifiers together'];
  if (clickIds.length === 0) {
    if (!Array.isArray(identifiers) || identifiers.length === 0)
      return ['conversionUploadError', 'UNPARSEABLE_GCLID', 'a click id or user identifiers are required'];
    for (const identifier of identifiers as unknown[]) {
      if (!isObject(identifier)) return ['requestError', 'INVALID_INPUT', 'userIdentifiers must be objects'];
      const hashes = ['hashedEmail', 'hashedPhoneNumber'].filter((k) => identifier[k] !== undefined);
      if (hashes.length !== 1 || !HASHED.test(String(identifier[hashes[0] as string])))
        return [
          'collectionSizeError',
          'INVALID_USER_IDENTIFIER',
          'each user identifier is one SHA-256 hex hash',
        ];
    }
  } else {
    const id = conversion[clickIds[0] as string];
    if (!nonEmpty(id) || !/^[\w-]{1,200}$/.test(id))
      return ['conversionUploadError', 'UNPARSEABLE_GCLID', `${clickIds[0]} cannot be parsed`];
  }
  if (
    typeof conversion.conversionAction !== 'string' ||
    !new RegExp(`^customers/${customer}/conversionActions/\\d+$`).test(conversion.conversionAction)
  )
    return [
      'conversionUploadError',
      'INVALID_CONVERSION_ACTION',
      'conversionAction is not a resource name of this customer',
    ];
  const time =
    typeof conversion.conversionDateTime === 'string'
      ? GOOGLE_DATE_TIME.exec(conversion.conversionDateTime)
      : null;
  if (!time)
    return [
      'dateError',
      'INVALID_FIELD_VALUES_IN_DATE_TIME',
      'conversionDateTime must be yyyy-mm-dd hh:mm:ss+|-hh:mm',
    ];
  const at = Date.parse(`${time[1]}-${time[2]}-${time[3]}T${time[4]}:${time[5]}:${time[6]}${time[7]}`);
  if (Number.isNaN(at))
    return ['dateError', 'INVALID_FIELD_VALUES_IN_DATE_TIME', 'conversionDateTime is not a date'];
  if (at > now + 60_000)
    return ['conversionUploadError', 'CONVERSION_PRECEDES_EVENT', 'the conversion is in the future'];
  if (now - at > GOOGLE_MAX_CLICK_AGE_MS)
    return ['conversionUploadError', 'EXPIRED_EVENT', 'the click is older than the conversion window'];
  if (
    conversion.conversionValue !== undefined &&
    (typeof conversion.conversionValue !== 'number' || !Number.isFinite(conversion.conversionValue))
  )
    return ['fieldError', 'INVALID_VALUE', 'conversionValue must be a number'];
  if (
    conversion.currencyCode !== undefined &&
    (typeof conversion.currencyCode !== 'string' || !/^[A-Z]{3}$/.test(conversion.currencyCode))
  )
    return ['conversionUploadError', 'INVALID_CURRENCY_CODE', 'currencyCode must be ISO 4217'];
  if (
    conversion.orderId !== undefined &&
    (typeof conversion.orderId !== 'string' ||
      conversion.orderId.length === 0 ||
      conversion.orderId.length > 64)
  )
    return ['stringLengthError', 'TOO_LONG', 'orderId must have 1 to 64 characters'];
  return undefined;
}

const googleAds: Handler = (incoming, state) => {
  if (incoming.method === 'POST' && incoming.path === '/token') {
    const form = (incoming.headers['content-type'] ?? '').startsWith('application/x-www-form-urlencoded')
      ? new URLSearchParams(incoming.body)
      : new URLSearchParams();
    if (form.get('grant_type') !== 'refresh_token')
      return {
        status: 400,
        body: { error: 'unsupported_grant_type', error_description: 'Invalid grant_type: ' },
      };
    if (
      form.get('client_id') !== state.expected.clientId ||
      form.get('client_secret') !== state.expected.clientSecret
    )
      return {
        status: 401,
        body: { error: 'invalid_client', error_description: 'The OAuth client was not found.' },
      };
    if (form.get('refresh_token') !== state.expected.refreshToken)
      return {
        status: 400,
        body: { error: 'invalid_grant', error_description: 'Token has been expired or revoked.' },
      };
    state.accept('token', { client_id: form.get('client_id') });
    return {
      status: 200,
      body: {
        access_token: googleAccessToken(state.expected.refreshToken ?? ''),
        expires_in: 3599,
        scope: 'https://www.googleapis.com/auth/adwords',
        token_type: 'Bearer',
      },
    };
  }
  const rpcError = (
    status: number,
    statusText: string,
    message: string,
    errorCode?: Record<string, string>,
  ) => ({
    status,
    body: {
      error: {
        code: status,
        message,
        status: statusText,
        ...(errorCode
          ? {
              details: [
                {
                  '@type': 'type.googleapis.com/google.ads.googleads.v26.errors.GoogleAdsFailure',
                  errors: [{ errorCode, message }],
                  requestId: 'lookalike-request',
                },
              ],
            }
          : {}),
      },
    },
  });
  const path = incoming.path.match(/^\/(v\d+)\/customers\/(\d+):uploadClickConversions$/);
  if (incoming.method !== 'POST' || !path) return rpcError(404, 'NOT_FOUND', 'Not Found');
  if (incoming.headers.authorization !== `Bearer ${googleAccessToken(state.expected.refreshToken ?? '')}`)
    return rpcError(401, 'UNAUTHENTICATED', 'Request had invalid authentication credentials.', {
      authenticationError: 'OAUTH_TOKEN_INVALID',
    });
  if (incoming.headers['developer-token'] !== state.expected.developerToken)
    return rpcError(401, 'UNAUTHENTICATED', 'The developer token is not valid.', {
      authenticationError: 'DEVELOPER_TOKEN_INVALID',
    });
  const customer = path[2] ?? '';
  if (customer !== GOOGLE_ADS_LOOKALIKE_CUSTOMER)
    return rpcError(403, 'PERMISSION_DENIED', 'The caller does not have permission', {
      authorizationError: 'USER_PERMISSION_DENIED',
    });
  const login = incoming.headers['login-customer-id'];
  if (login !== undefined && !/^\d{10}$/.test(String(login)))
    return rpcError(400, 'INVALID_ARGUMENT', 'login-customer-id must be 10 digits', {
      requestError: 'INVALID_INPUT',
    });
  const body = parseJson(incoming.body);
  if (
    !isJson(incoming) ||
    !isObject(body) ||
    !Array.isArray(body.conversions) ||
    body.conversions.length === 0
  )
    return rpcError(400, 'INVALID_ARGUMENT', 'Request contains an invalid argument.', {
      requestError: 'REQUIRED_FIELD_MISSING',
    });
  if (body.conversions.length > GOOGLE_ADS_MAX_CONVERSIONS)
    return rpcError(400, 'INVALID_ARGUMENT', 'Too many operations in the request.', {
      requestError: 'TOO_MANY_OPERATIONS',
    });
  if (body.partialFailure !== true)
    return rpcError(400, 'INVALID_ARGUMENT', 'partialFailure must be true for this upload.', {
      requestError: 'INVALID_INPUT',
    });
  const now = Date.now();
  const errors: Record<string, unknown>[] = [];
  const results: Record<string, unknown>[] = [];
  (body.conversions as unknown[]).forEach((conversion, index) => {
    const problem = googleConversionProblem(conversion, customer, now);
    const scripted = problem
      ? undefined
      : state.rejection(conversion as Record<string, unknown>, 'uploadClickConversions');
    if (problem || scripted) {
      const [group, code, message] = problem ?? [
        'conversionUploadError',
        scripted as string,
        scripted as string,
      ];
      errors.push({
        errorCode: { [group]: code },
        message,
        location: { fieldPathElements: [{ fieldName: 'conversions', index }] },
      });
      results.push({});
      return;
    }
    const item = conversion as Record<string, unknown>;
    state.accept('uploadClickConversions', item);
    results.push({
      ...(item.gclid ? { gclid: item.gclid } : {}),
      conversionAction: item.conversionAction,
      conversionDateTime: item.conversionDateTime,
    });
  });
  return {
    status: 200,
    body: {
      results,
      ...(errors.length > 0
        ? {
            partialFailureError: {
              code: 3,
              message: `Errors in ${errors.length} conversion(s).`,
              details: [
                {
                  '@type': `type.googleapis.com/google.ads.googleads.${path[1]}.errors.GoogleAdsFailure`,
                  errors,
                  requestId: 'lookalike-request',
                },
              ],
            },
          }
        : {}),
      jobId: '1',
    },
  };
};

const handlers: Record<LookAlikeVendor, Handler> = {
  amplitude,
  mixpanel,
  braze,
  customer_io: customerIo,
  segment,
  onesignal: oneSignal,
  webhook,
  hubspot,
  meta_conversions: metaConversions,
  google_ads: googleAds,
};

/** Each vendor's error body for a status a test scripts. */
function scriptedBody(vendor: LookAlikeVendor, status: number): unknown {
  switch (vendor) {
    case 'amplitude':
      return status === 429
        ? {
            code: 429,
            error: 'Too many requests for some devices and users',
            eps_threshold: 30,
            throttled_devices: {},
            throttled_users: {},
            throttled_events: [],
          }
        : { code: status, error: status === 400 ? 'Invalid event JSON' : 'Internal server error' };
    case 'mixpanel':
      return status === 429
        ? {
            code: 429,
            error: 'Project exceeded rate limits. Please retry the request with exponential backoff.',
            status: 'Too Many Requests',
          }
        : { code: status, error: status === 400 ? 'Invalid JSON' : 'Internal Server Error', status: 'Error' };
    case 'braze':
      return {
        message:
          status === 429 ? 'Rate limit exceeded' : status === 400 ? 'Bad Request' : 'Internal Server Error',
      };
    case 'customer_io':
      return status === 400
        ? { errors: [{ reason: 'invalid', field: 'batch', message: 'malformed request' }] }
        : {};
    case 'segment':
      return { success: false, message: status === 400 ? 'invalid JSON' : 'error' };
    case 'onesignal':
      return status === 429
        ? { errors: ['API rate limit exceeded'], limit: 'App ID' }
        : status === 400
          ? {}
          : '';
    case 'webhook':
      return { error: `scripted ${status}` };
    case 'hubspot':
      return status === 429
        ? {
            status: 'error',
            message: 'You have reached your ten_secondly_rolling limit.',
            errorType: 'RATE_LIMIT',
            policyName: 'TEN_SECONDLY_ROLLING',
          }
        : status === 400
          ? { status: 'error', message: 'Invalid input JSON', category: 'VALIDATION_ERROR' }
          : { status: 'error', message: 'internal error', category: 'INTERNAL_ERROR' };
    case 'meta_conversions':
      return status === 400
        ? {
            error: {
              message: '(#100) Invalid parameter',
              type: 'OAuthException',
              code: 100,
              fbtrace_id: 'AScripted',
            },
          }
        : status === 429
          ? {
              error: {
                message: '(#4) Application request limit reached',
                type: 'OAuthException',
                code: 4,
                is_transient: true,
                fbtrace_id: 'AScripted',
              },
            }
          : {
              error: {
                message: 'An unexpected error has occurred. Please retry your request later.',
                type: 'OAuthException',
                code: 2,
                is_transient: true,
                fbtrace_id: 'AScripted',
              },
            };
    case 'google_ads':
      return {
        error: {
          code: status,
          message: status === 429 ? 'Resource has been exhausted (e.g. check quota).' : 'scripted failure',
          status: status === 429 ? 'RESOURCE_EXHAUSTED' : status === 400 ? 'INVALID_ARGUMENT' : 'INTERNAL',
        },
      };
  }
}

/** Requests larger than any vendor takes are cut off instead of buffered. */
const MAX_REQUEST_BYTES = 25 * 1024 * 1024;

/** Starts the look-alike of `vendor` on a free port of 127.0.0.1. */
export async function startLookAlikeVendor(
  vendor: LookAlikeVendor,
  options: { credentials?: Record<string, string> } = {},
): Promise<LookAlikeServer> {
  const credentials = options.credentials ?? lookAlikeCredentials[vendor];
  const requests: RecordedRequest[] = [];
  const accepted: AcceptedItem[] = [];
  const dropped: AcceptedItem[] = [];
  const failures: (ScriptedAnswer | 'pass')[] = [];
  const delays: number[] = [];
  const rejections: {
    predicate: (item: Record<string, unknown>, endpoint: string) => boolean;
    reason: string;
  }[] = [];
  const state: VendorState = {
    expected: credentials,
    accept: (endpoint, item) => accepted.push({ endpoint, item }),
    drop: (endpoint, item) => dropped.push({ endpoint, item }),
    rejection: (item, endpoint) => rejections.find((r) => r.predicate(item, endpoint))?.reason,
  };

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_REQUEST_BYTES) req.destroy();
      else chunks.push(chunk);
    });
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://look-alike');
      const incoming: Incoming = {
        method: req.method ?? 'GET',
        path: url.pathname,
        query: url.searchParams,
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
      };
      const next = failures.shift();
      const scripted = next === 'pass' ? undefined : next;
      const answer: Answer = scripted
        ? {
            status: scripted.status,
            body: scripted.body ?? scriptedBody(vendor, scripted.status),
            headers: {
              ...(scripted.retryAfter ? { 'Retry-After': scripted.retryAfter } : {}),
              ...scripted.headers,
            },
          }
        : handlers[vendor](incoming, state);
      requests.push({
        method: incoming.method,
        path: incoming.path,
        query: Object.fromEntries(url.searchParams),
        headers: incoming.headers,
        body: incoming.body,
        status: answer.status,
      });
      const text =
        answer.body === undefined
          ? ''
          : typeof answer.body === 'string'
            ? answer.body
            : JSON.stringify(answer.body);
      const send = () => {
        res.writeHead(answer.status, {
          ...(typeof answer.body === 'object'
            ? { 'Content-Type': 'application/json' }
            : { 'Content-Type': 'text/plain' }),
          ...answer.headers,
        });
        res.end(text);
      };
      const delay = delays.shift();
      if (delay) setTimeout(send, delay).unref();
      else send();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const base = `http://127.0.0.1:${port}`;

  return {
    vendor,
    url: vendor === 'webhook' ? `${base}/hooks/events` : base,
    requests,
    accepted,
    dropped,
    credentials,
    failNext(answer, times = 1) {
      for (let i = 0; i < times; i += 1) failures.push(answer);
    },
    passNext(times) {
      for (let i = 0; i < times; i += 1) failures.push('pass');
    },
    delayNext(ms, times = 1) {
      for (let i = 0; i < times; i += 1) delays.push(ms);
    },
    rejectItems(predicate, reason = 'rejected by the vendor') {
      rejections.push({ predicate, reason });
    },
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}
