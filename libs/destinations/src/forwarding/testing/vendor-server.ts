import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ResolvedDestination } from '@pipeline/tenancy';
import { verifyWebhookSignature, webhookHeaders } from '../webhook-signature';

// Local look-alikes of each vendor's HTTP API, strict where the vendor's docs are (see
// /work/shared/notes/vendor-apis.md): a client that passes here sends what the vendor
// documents. Each answers bad auth and bad shapes with the vendor's own status and error body,
// records what it accepted, and can be told to fail, stall or reject items.

export type LookAlikeVendor =
  'amplitude' | 'mixpanel' | 'braze' | 'customer_io' | 'segment' | 'onesignal' | 'webhook';

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
};

const destinationKinds: Record<LookAlikeVendor, ResolvedDestination['kind']> = {
  amplitude: 'product_analytics',
  mixpanel: 'product_analytics',
  braze: 'messaging',
  customer_io: 'messaging',
  segment: 'customer_data',
  onesignal: 'push',
  webhook: 'webhook',
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
    server.vendor === 'braze' ? { restEndpoint: 'https://rest.iad-01.braze.com' } : {};
  return {
    integrationId: `int-${server.vendor}`,
    kind: destinationKinds[server.vendor],
    appId: `app-${server.vendor}`,
    appType: server.vendor,
    dataType: 'events',
    config: {
      global: server.vendor === 'webhook' ? { url: server.url } : {},
      tasks: [{ task_type: 'forward' }],
    },
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

const handlers: Record<LookAlikeVendor, Handler> = {
  amplitude,
  mixpanel,
  braze,
  customer_io: customerIo,
  segment,
  onesignal: oneSignal,
  webhook,
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
