import {
  defineLookAlike,
  HASHED,
  isJson,
  isObject,
  type LookAlikeHandler,
  nonEmpty,
  parseJson,
} from '../../testing/look-alike';

// Meta Conversions API (Graph API /{version}/{pixel_id}/events).

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

const metaConversions: LookAlikeHandler = (incoming, state) => {
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

/** The app config the look-alike expects (the pixel it knows). */
const metaConversionsAppConfig = { pixelId: '1234567890' };

export const metaConversionsLookAlike = defineLookAlike({
  vendor: 'meta_conversions',
  kind: 'advertising',
  credentials: { accessToken: 'EAAB-look-alike-token' },
  appConfig: () => ({ ...metaConversionsAppConfig }),
  handle: metaConversions,
  scriptedBody: (status) =>
    status === 400
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
          },
  // The Graph API answers a bad token 400 (OAuthException code 190); events older than 7 days
  // are skipped, so the contract sends recent ones.
  contract: { perRequest: 1000, authStatus: 400, events: 'recentTrack' },
});
