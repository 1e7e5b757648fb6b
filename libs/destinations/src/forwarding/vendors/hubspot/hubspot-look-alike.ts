import {
  defineLookAlike,
  isJson,
  isObject,
  type LookAlikeHandler,
  parseJson,
} from '../../testing/look-alike';

// HubSpot CRM v3: contact properties and contacts batch upsert.

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

const hubspot: LookAlikeHandler = (incoming, state) => {
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
  if (incoming.method === 'POST' && incoming.path === '/crm/v3/objects/contacts/gdpr-delete') {
    const body = parseJson(incoming.body);
    if (!isJson(incoming) || !isObject(body))
      return fail(400, 'VALIDATION_ERROR', 'Invalid input JSON on line 1');
    if (body.idProperty !== 'email' && body.idProperty !== undefined)
      return fail(400, 'VALIDATION_ERROR', 'idProperty must be email or absent');
    if (
      typeof body.objectId !== 'string' ||
      (body.idProperty === 'email' && !LOOSE_EMAIL.test(body.objectId))
    )
      return fail(400, 'VALIDATION_ERROR', `Email address ${String(body.objectId)} is invalid`);
    // Known or not, the email is blocked from then on: 204 either way.
    state.accept('contacts/gdpr-delete', { objectId: body.objectId, idProperty: body.idProperty });
    return { status: 204 };
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

export const hubspotLookAlike = defineLookAlike({
  vendor: 'hubspot',
  kind: 'customer_data',
  credentials: { accessToken: 'pat-na1-look-alike' },
  handle: hubspot,
  scriptedBody: (status) =>
    status === 429
      ? {
          status: 'error',
          message: 'You have reached your ten_secondly_rolling limit.',
          errorType: 'RATE_LIMIT',
          policyName: 'TEN_SECONDLY_ROLLING',
        }
      : status === 400
        ? { status: 'error', message: 'Invalid input JSON', category: 'VALIDATION_ERROR' }
        : { status: 'error', message: 'internal error', category: 'INTERNAL_ERROR' },
  contract: { perRequest: 100, authStatus: 401, events: 'identify', warm: true },
});
