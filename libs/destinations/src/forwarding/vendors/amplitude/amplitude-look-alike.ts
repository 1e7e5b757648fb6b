import {
  basic,
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

// Amplitude HTTP V2 API (POST /2/httpapi) and User Privacy API v1 (/api/2/deletions/users).

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

const DELETION_PATH = '/api/2/deletions/users';
const MAX_DELETION_IDS = 100;
/** Jobs run 10 to 13 days after a batch's first request; this one schedules 10 days ahead. */
const JOB_DELAY_DAYS = 10;
const DAY_MS = 86_400_000;
/** A job moves on one state each time it is listed: staging, submitted, then done. */
const jobStates = ['staging', 'submitted', 'done'] as const;

interface DeletionJob {
  day: string;
  polls: number;
  amplitudeIds: { amplitude_id: number; requested_on_day: string; requester: string }[];
  /** Rejected ids (rejectItems on 'deletions') keep their job from finishing, as a stuck job would. */
  stuck: boolean;
}

/** The users the project holds (from accepted events), by user id, with their Amplitude ids. */
const usersOf = (state: VendorState) => stored(state, 'amplitude.users', () => new Map<string, number>());
const jobsOf = (state: VendorState) => stored(state, 'amplitude.jobs', () => new Map<string, DeletionJob>());

const dayOf = (ms: number) => new Date(ms).toISOString().slice(0, 10);
const DAY = /^\d{4}-\d{2}-\d{2}$/;

function deletions(incoming: Incoming, state: VendorState): Answer {
  if (incoming.headers.authorization !== basic(state.expected.apiKey ?? '', state.expected.secretKey ?? '')) {
    return { status: 401, body: 'Invalid Api-Key or Secret-Key' };
  }
  if (incoming.method === 'GET') {
    const start = incoming.query.get('start_day') ?? '';
    const end = incoming.query.get('end_day') ?? '';
    if (!DAY.test(start) || !DAY.test(end)) {
      return { status: 400, body: { error: 'start_day and end_day are required, YYYY-MM-DD' } };
    }
    if (Date.parse(end) < Date.parse(start) || Date.parse(end) - Date.parse(start) > 184 * DAY_MS) {
      return { status: 400, body: { error: 'The time range must be at most six months' } };
    }
    const listed = [...jobsOf(state).values()].filter((job) => job.day >= start && job.day <= end);
    for (const job of listed) if (!job.stuck) job.polls += 1;
    return {
      status: 200,
      body: listed.map((job) => ({
        day: job.day,
        status: jobStates[Math.min(job.polls, jobStates.length - 1)],
        amplitude_ids: job.amplitudeIds,
      })),
    };
  }
  if (incoming.method !== 'POST') return { status: 405, body: { error: 'Method not allowed' } };
  if (!isJson(incoming)) return { status: 400, body: { error: 'Invalid JSON request body' } };
  const body = parseJson(incoming.body);
  if (!isObject(body)) return { status: 400, body: { error: 'Invalid JSON request body' } };
  const userIds = body.user_ids ?? [];
  const amplitudeIds = body.amplitude_ids ?? [];
  if (!Array.isArray(userIds) || !userIds.every(nonEmpty) || !Array.isArray(amplitudeIds)) {
    return { status: 400, body: { error: 'user_ids must be a list of strings' } };
  }
  if (userIds.length + amplitudeIds.length === 0) {
    return { status: 400, body: { error: 'Request must include amplitude_ids or user_ids' } };
  }
  if (userIds.length + amplitudeIds.length > MAX_DELETION_IDS) {
    return {
      status: 400,
      body: { error: `Cannot delete more than ${MAX_DELETION_IDS} users in one request` },
    };
  }
  const users = usersOf(state);
  const unknown = userIds.filter((id) => !users.has(id));
  if (unknown.length > 0 && body.ignore_invalid_id !== true) {
    return { status: 400, body: { error: 'Invalid user ids', invalid_user_ids: unknown } };
  }
  const now = Date.now();
  const day = dayOf(now + JOB_DELAY_DAYS * DAY_MS);
  const jobs = jobsOf(state);
  const job = jobs.get(day) ?? { day, polls: 0, amplitudeIds: [], stuck: false };
  jobs.set(day, job);
  const requester = typeof body.requester === 'string' ? body.requester : '';
  for (const userId of userIds.filter((id) => users.has(id))) {
    const item = { user_id: userId, requester };
    if (state.rejection(item, 'deletions')) job.stuck = true;
    state.accept('deletions', item);
    job.amplitudeIds.push({ amplitude_id: users.get(userId) ?? 0, requested_on_day: dayOf(now), requester });
  }
  return {
    status: 200,
    body: [{ day: job.day, status: jobStates[Math.min(job.polls, 2)], amplitude_ids: job.amplitudeIds }],
  };
}

const amplitude: LookAlikeHandler = (incoming, state) => {
  if (incoming.path === DELETION_PATH) return deletions(incoming, state);
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
  const users = usersOf(state);
  for (const event of body.events as Record<string, unknown>[]) {
    state.accept('/2/httpapi', event);
    if (nonEmpty(event.user_id) && !users.has(event.user_id)) users.set(event.user_id, 100_000 + users.size);
  }
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
  credentials: { apiKey: 'amp-test-key', secretKey: 'amp-test-secret' },
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
