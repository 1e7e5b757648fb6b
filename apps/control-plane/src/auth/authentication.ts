import type { Request } from 'express';
import { AppError } from '@pipeline/errors';
import type { ApiKeyAuthenticator } from './api-key-authenticator';
import { callerHasScope, type InternalCaller, type InternalTokens } from './internal-tokens';
import type { OperatorToken } from './operator-token';
import type { Principal } from './principal';
import { ROUTE_SECURITY_AUDIT, type RouteSecurityAudit } from './route-security';

export const AUTHENTICATOR = 'authenticator';
export const INTERNAL_TOKENS = 'internalTokens';
export const OPERATOR_TOKEN = 'operatorToken';

export interface ServicePrincipal {
  service: 'internal';
  caller: InternalCaller;
}

/** The internal caller tsoa resolved for this request (`request.user`). */
export function internalCallerOf(request: Request): InternalCaller {
  const principal = (request as Request & { user?: ServicePrincipal }).user;
  if (principal?.service !== 'internal') throw new Error('internalCallerOf called on a non-internal route');
  return principal.caller;
}

/**
 * tsoa's authentication module. `api_key`: the management API's keys with scopes.
 * `internal_token`: one token per internal caller, each allowed its own endpoint only.
 * `operator_token`: OPERATOR_API_TOKEN, for the operator routes.
 */
export async function expressAuthentication(
  request: Request,
  securityName: string,
  requiredScopes: string[] = [],
): Promise<Principal | ServicePrincipal | { service: 'operator' }> {
  // Before any await: the start-up audit reads what was recorded as soon as the call returns.
  const audit = request.app.locals[ROUTE_SECURITY_AUDIT] as RouteSecurityAudit | undefined;
  if (audit) {
    audit.record({ name: securityName, scopes: [...requiredScopes] });
    throw new Error('route security audit: nothing is authenticated');
  }
  if (securityName === 'api_key') {
    const authenticator = request.app.locals[AUTHENTICATOR] as ApiKeyAuthenticator;
    return authenticator.authenticate(request, requiredScopes);
  }
  if (securityName === 'internal_token') {
    const tokens = request.app.locals[INTERNAL_TOKENS] as InternalTokens;
    const presented = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '')?.[1];
    const caller = presented ? tokens.callerOf(presented) : null;
    // A known token on another caller's endpoint gets the same answer as an unknown one: the
    // answer tells nobody which endpoint a token would open. A route naming no scope admits
    // nobody (every() of none is true): start-up refuses one, this holds if it got through.
    if (caller && requiredScopes.length > 0 && requiredScopes.every((scope) => callerHasScope(caller, scope)))
      return { service: 'internal', caller };
    throw new AppError(401, 'invalid_service_token', "This endpoint needs its caller's internal token");
  }
  if (securityName === 'operator_token') {
    const operator = request.app.locals[OPERATOR_TOKEN] as OperatorToken;
    return operator.authenticate(request.headers.authorization);
  }
  throw new Error(`Unknown security scheme ${securityName}`);
}
