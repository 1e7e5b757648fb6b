export class ControlPlaneUnavailable extends Error {}

/**
 * What a status the control plane answers a tenant lookup with means: `tenant` (2xx, the body
 * holds it), `unknown` (a 4xx about the key: unknown, or too long or odd to be one),
 * `token_refused` (401 or 403: our own service token refused, a deployment fault) or
 * `unavailable` (anything else, asked again later).
 */
export function lookupOutcome(status: number): 'tenant' | 'unknown' | 'token_refused' | 'unavailable' {
  if (status >= 200 && status < 300) return 'tenant';
  // Answering the SDK 401 for a refused token would make it drop the events, while
  // "unavailable" has it retry until the deployment is fixed.
  if (status === 401 || status === 403) return 'token_refused';
  if (status >= 400 && status < 500) return 'unknown';
  return 'unavailable';
}

/**
 * The tenant in a 2xx answer's body (`{ data: tenant }`). A body without one, or one that names
 * no account, is a control plane that does not speak this version: unavailable, never a tenant
 * whose changes no cache could match to it.
 */
export function tenantOfAnswer<T>(body: unknown): T {
  const data = (body as { data?: unknown } | null)?.data;
  if (typeof data !== 'object' || data === null || Array.isArray(data))
    throw new ControlPlaneUnavailable('the control plane answered without a tenant');
  if (typeof (data as { accountId?: unknown }).accountId !== 'string')
    throw new ControlPlaneUnavailable('the control plane answered a tenant without its account');
  return data as T;
}
