import {
  basic,
  bytes,
  defineLookAlike,
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

// Customer.io Track API v2 (POST /api/v2/batch) and v1 suppression
// (POST /api/v1/customers/{id}/suppress).

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

/** Suppressed people: deleted, and their id refused from then on (answered, not ingested). */
const suppressedOf = (state: VendorState) => stored(state, 'customer-io.suppressed', () => new Set<string>());

function suppress(incoming: Incoming, state: VendorState, encodedId: string): Answer {
  if (incoming.headers.authorization !== basic(state.expected.siteId ?? '', state.expected.apiKey ?? '')) {
    return { status: 401, body: undefined };
  }
  let id: string;
  try {
    id = decodeURIComponent(encodedId);
  } catch {
    return { status: 400, body: { meta: { error: 'invalid identifier' } } };
  }
  if (!nonEmpty(id) || Buffer.byteLength(id) > 150) {
    return { status: 400, body: { meta: { error: 'identifier must be 1 to 150 bytes' } } };
  }
  suppressedOf(state).add(id);
  state.accept('suppress', { id });
  return { status: 200, body: {} };
}

const customerIo: LookAlikeHandler = (incoming, state) => {
  const suppression = incoming.path.match(/^\/api\/v1\/customers\/([^/]+)\/suppress$/);
  if (incoming.method === 'POST' && suppression) return suppress(incoming, state, suppression[1] ?? '');
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
    else if (isSuppressed(item as Record<string, unknown>, state))
      state.drop('batch', item as Record<string, unknown>);
    else state.accept('batch', item as Record<string, unknown>);
  });
  return errors.length > 0 ? { status: 207, body: { errors } } : { status: 200, body: {} };
};

function isSuppressed(item: Record<string, unknown>, state: VendorState): boolean {
  const identifiers = item.identifiers;
  return item.type === 'person' && isObject(identifiers) && nonEmpty(identifiers.id)
    ? suppressedOf(state).has(identifiers.id)
    : false;
}

export const customerIoLookAlike = defineLookAlike({
  vendor: 'customer_io',
  kind: 'messaging',
  credentials: { siteId: 'cio-site', apiKey: 'cio-key' },
  handle: customerIo,
  scriptedBody: (status) =>
    status === 400 ? { errors: [{ reason: 'invalid', field: 'batch', message: 'malformed request' }] } : {},
  contract: { perRequest: 1000, authStatus: 401 },
});
