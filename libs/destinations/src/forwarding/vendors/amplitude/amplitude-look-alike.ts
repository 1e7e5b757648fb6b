import {
  defineLookAlike,
  isJson,
  isObject,
  type LookAlikeHandler,
  nonEmpty,
  parseJson,
} from '../../testing/look-alike';

// Amplitude HTTP V2 API (POST /2/httpapi).

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

const amplitude: LookAlikeHandler = (incoming, state) => {
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

export const amplitudeLookAlike = defineLookAlike({
  vendor: 'amplitude',
  kind: 'product_analytics',
  credentials: { apiKey: 'amp-test-key' },
  handle: amplitude,
  scriptedBody: (status) =>
    status === 429
      ? {
          code: 429,
          error: 'Too many requests for some devices and users',
          eps_threshold: 30,
          throttled_devices: {},
          throttled_users: {},
          throttled_events: [],
        }
      : { code: status, error: status === 400 ? 'Invalid event JSON' : 'Internal server error' },
  contract: { perRequest: 2000, authStatus: 400 },
});
