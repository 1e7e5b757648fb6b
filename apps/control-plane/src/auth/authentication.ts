import type { Request } from 'express';
import { AppError } from '@pipeline/errors';
import type { ApiKeyAuthenticator } from './api-key-authenticator';
import type { Principal } from './principal';
import { constantTimeEqual } from './secret-token';

export const AUTHENTICATOR = 'authenticator';
export const INTERNAL_SERVICE_TOKEN = 'internalServiceToken';

export interface ServicePrincipal {
  service: 'internal';
}

/**
 * tsoa's authentication module. `api_key`: the management API's keys with scopes.
 * `internal_token`: the shared secret of the internal endpoints, and nothing else.
 */
export async function expressAuthentication(
  request: Request,
  securityName: string,
  requiredScopes: string[] = [],
): Promise<Principal | ServicePrincipal> {
  if (securityName === 'api_key') {
    const authenticator = request.app.locals[AUTHENTICATOR] as ApiKeyAuthenticator;
    return authenticator.authenticate(request, requiredScopes);
  }
  if (securityName === 'internal_token') {
    const expected = request.app.locals[INTERNAL_SERVICE_TOKEN] as string;
    const presented = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '')?.[1];
    if (presented && constantTimeEqual(presented, expected)) return { service: 'internal' };
    throw new AppError(401, 'invalid_service_token', 'This endpoint needs the internal service token');
  }
  throw new Error(`Unknown security scheme ${securityName}`);
}
