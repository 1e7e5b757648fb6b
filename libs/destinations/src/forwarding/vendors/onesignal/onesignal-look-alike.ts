import {
  bytes,
  defineLookAlike,
  isIsoTime,
  isJson,
  isObject,
  type LookAlikeHandler,
  nonEmpty,
  parseJson,
  stored,
  type VendorState,
} from '../../testing/look-alike';

// OneSignal: custom events, user property updates and user deletion.

/** The external ids of the users the app holds (from updates and custom events). */
const usersOf = (state: VendorState) => stored(state, 'onesignal.users', () => new Set<string>());

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

const oneSignal: LookAlikeHandler = (incoming, state) => {
  const authorized = incoming.headers.authorization === `Key ${state.expected.apiKey}`;
  const userPath = incoming.path.match(/^\/apps\/([^/]+)\/users\/by\/([^/]+)\/([^/]+)$/);

  if (incoming.method === 'DELETE' && userPath) {
    const fail = (status: number, code: string, title: string) => ({
      status,
      body: { errors: [{ code, title }] },
    });
    if (!authorized)
      return fail(401, 'auth-1', 'Please include a case-sensitive header of Authorization: Key <API-KEY>');
    if (userPath[1] !== state.expected.appId) return fail(404, 'app-not-found', 'App not found');
    const label = decodeURIComponent(userPath[2] ?? '');
    const id = decodeURIComponent(userPath[3] ?? '');
    if (label !== 'external_id' && label !== 'onesignal_id')
      return fail(400, 'invalid-alias', 'Unknown alias label');
    state.accept('delete_user', { alias_label: label, alias_id: id });
    if (!usersOf(state).delete(id)) return fail(404, 'user-not-found', 'User not found');
    return { status: 200, body: { identity: { onesignal_id: '567491ee-9105-4a87-9cbc-ed78a571645b' } } };
  }

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
    if (item.alias_label === 'external_id') usersOf(state).add(item.alias_id);
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
      } else {
        state.accept('custom_events', event);
        if (nonEmpty(event.external_id)) usersOf(state).add(event.external_id);
      }
    }
    return { status: 202, body: errors.length > 0 ? { errors } : {} };
  }
  return { status: 404, body: { errors: [{ code: 'not-found', title: 'Not Found' }] } };
};

export const oneSignalLookAlike = defineLookAlike({
  vendor: 'onesignal',
  kind: 'push',
  credentials: { appId: '5eb5a37e-b458-11e3-ac11-000c2940e62c', apiKey: 'os-app-key' },
  handle: oneSignal,
  scriptedBody: (status) =>
    status === 429 ? { errors: ['API rate limit exceeded'], limit: 'App ID' } : status === 400 ? {} : '',
  contract: { perRequest: 1000, authStatus: 401 },
});
