import {
  basic,
  defineLookAlike,
  isObject,
  type LookAlikeHandler,
  nonEmpty,
  parseJson,
  stored,
  type Answer,
  type Incoming,
  type VendorState,
} from '../../testing/look-alike';

// Mixpanel Import API (POST /import), by project token or service account, and the GDPR API's
// deletion tasks (/api/app/data-deletions/v3.0).

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

const DELETIONS = '/api/app/data-deletions/v3.0';
/** "You can add up to 1999 distinct IDs" (Create a Deletion Task). */
const MAX_DELETION_IDS = 1999;
/** "1 request per second" for the GDPR APIs; here, for creating tasks. */
const GDPR_INTERVAL_MS = 1000;

interface DeletionTask {
  distinctIds: string[];
  /** PENDING on creation, STARTED at the first status check, then SUCCESS (or FAILURE). */
  checks: number;
  /** A rejected id (rejectItems on 'data-deletions') ends its task in FAILURE. */
  fails: boolean;
}

const tasksOf = (state: VendorState) =>
  stored(state, 'mixpanel.tasks', () => new Map<string, DeletionTask>());

function gdpr(incoming: Incoming, state: VendorState): Answer {
  const error = (status: number, message: string): Answer => ({
    status,
    body: { status: 'error', error: message },
  });
  if (incoming.headers.authorization !== `Bearer ${state.expected.gdprToken}`) {
    return error(401, 'Invalid OAuth token');
  }
  if (incoming.query.get('token') !== state.expected.projectToken) return error(403, 'Invalid project token');
  const tasks = tasksOf(state);
  const byId = incoming.path.match(/^\/api\/app\/data-deletions\/v3\.0\/([^/]+)\/?$/);
  if (incoming.method === 'GET' && byId) {
    const task = tasks.get(decodeURIComponent(byId[1] ?? ''));
    if (!task) return { status: 200, body: { status: 'ok', results: { status: 'NOT_FOUND' } } };
    task.checks += 1;
    const status = task.checks === 1 ? 'STARTED' : task.fails ? 'FAILURE' : 'SUCCESS';
    return {
      status: 200,
      body: { status: 'ok', results: { status, result: '', distinct_ids: task.distinctIds } },
    };
  }
  if (incoming.method !== 'POST' || !/^\/api\/app\/data-deletions\/v3\.0\/?$/.test(incoming.path)) {
    return error(404, 'Not found');
  }
  const now = Date.now();
  const last = stored(state, 'mixpanel.lastCreate', () => ({ at: 0 }));
  if (now - last.at < GDPR_INTERVAL_MS) {
    return {
      status: 429,
      headers: { 'Retry-After': '1' },
      body: { status: 'error', error: 'Rate limit exceeded' },
    };
  }
  last.at = now;
  const body = parseJson(incoming.body);
  if (!isObject(body) || !Array.isArray(body.distinct_ids) || !body.distinct_ids.every(nonEmpty)) {
    return error(400, 'distinct_ids must be a list of strings');
  }
  if (body.distinct_ids.length === 0 || body.distinct_ids.length > MAX_DELETION_IDS) {
    return error(400, `distinct_ids must hold 1 to ${MAX_DELETION_IDS} ids`);
  }
  const complianceType = body.compliance_type ?? 'GDPR';
  if (complianceType !== 'GDPR' && complianceType !== 'CCPA')
    return error(400, 'compliance_type must be GDPR or CCPA');
  const taskId = `${1_583_792_934_719_392_965n + BigInt(tasks.size)}`;
  const task: DeletionTask = { distinctIds: body.distinct_ids as string[], checks: 0, fails: false };
  for (const distinctId of task.distinctIds) {
    const item = { distinct_id: distinctId, compliance_type: complianceType };
    if (state.rejection(item, 'data-deletions')) task.fails = true;
    state.accept('data-deletions', item);
  }
  tasks.set(taskId, task);
  return { status: 200, body: { status: 'ok', results: { task_id: taskId } } };
}

const mixpanel: LookAlikeHandler = (incoming, state) => {
  if (incoming.path.startsWith(DELETIONS)) return gdpr(incoming, state);
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

export const mixpanelLookAlike = defineLookAlike({
  vendor: 'mixpanel',
  kind: 'product_analytics',
  credentials: {
    projectToken: 'mp-test-token',
    gdprToken: 'mp-gdpr-token',
    serviceAccount: 'sa.test',
    secret: 'sa-secret',
    projectId: '31337',
  },
  // The look-alike takes either; the project token is the simpler default.
  destinationCredentials: (credentials) => {
    const projectToken: Record<string, unknown> = { ...credentials };
    delete projectToken.serviceAccount;
    delete projectToken.secret;
    delete projectToken.projectId;
    return projectToken;
  },
  handle: mixpanel,
  scriptedBody: (status) =>
    status === 429
      ? {
          code: 429,
          error: 'Project exceeded rate limits. Please retry the request with exponential backoff.',
          status: 'Too Many Requests',
        }
      : { code: status, error: status === 400 ? 'Invalid JSON' : 'Internal Server Error', status: 'Error' },
  contract: { perRequest: 2000, authStatus: 401 },
});
