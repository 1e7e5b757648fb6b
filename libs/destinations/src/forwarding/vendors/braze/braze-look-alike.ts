import {
  defineLookAlike,
  isIsoTime,
  isJson,
  isObject,
  type LookAlikeHandler,
  nonEmpty,
  parseJson,
  stored,
  type Answer,
  type Incoming,
  type VendorState,
} from '../../testing/look-alike';

// Braze REST API, /users/track and /users/delete.

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

/** "Up to 50 external_ids, user_aliases, braze_ids, email_addresses, or phone_numbers". */
const MAX_DELETIONS = 50;
const deletionKinds = ['external_ids', 'user_aliases', 'braze_ids', 'email_addresses', 'phone_numbers'];

/** The external ids of the profiles the workspace holds (from /users/track). */
const profilesOf = (state: VendorState) => stored(state, 'braze.profiles', () => new Set<string>());

function deleteUsers(incoming: Incoming, state: VendorState): Answer {
  if (incoming.headers.authorization !== `Bearer ${state.expected.apiKey}`) {
    return { status: 401, body: { message: 'Unauthorized: unknown or missing REST API key' } };
  }
  if (!isJson(incoming)) return { status: 400, body: { message: 'Content-Type must be application/json' } };
  const body = parseJson(incoming.body);
  if (!isObject(body)) return { status: 400, body: { message: 'Invalid JSON body' } };
  const given = deletionKinds.filter((kind) => body[kind] !== undefined);
  if (given.length !== 1) {
    return { status: 400, body: { message: 'Exactly one of ' + deletionKinds.join(', ') + ' is required' } };
  }
  const ids = body.external_ids;
  if (given[0] !== 'external_ids' || !Array.isArray(ids) || !ids.every(nonEmpty)) {
    return { status: 400, body: { message: 'external_ids must be an array of strings' } };
  }
  if (ids.length === 0 || ids.length > MAX_DELETIONS) {
    return { status: 400, body: { message: 'Max Input Length Exceeded' } };
  }
  const profiles = profilesOf(state);
  let deleted = 0;
  for (const id of ids) {
    state.accept('users/delete', { external_id: id });
    if (profiles.delete(id)) deleted += 1;
  }
  return { status: 201, body: { deleted, message: 'success' } };
}

const braze: LookAlikeHandler = (incoming, state) => {
  if (incoming.method === 'POST' && incoming.path === '/users/delete') return deleteUsers(incoming, state);
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
        const externalId = (object as Record<string, unknown>).external_id;
        if (nonEmpty(externalId)) profilesOf(state).add(externalId);
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

export const brazeLookAlike = defineLookAlike({
  vendor: 'braze',
  kind: 'messaging',
  credentials: { apiKey: 'braze-test-key' },
  appConfig: () => ({ restEndpoint: 'https://rest.iad-01.braze.com' }),
  handle: braze,
  scriptedBody: (status) => ({
    message:
      status === 429 ? 'Rate limit exceeded' : status === 400 ? 'Bad Request' : 'Internal Server Error',
  }),
  contract: { perRequest: 75, authStatus: 401 },
});
