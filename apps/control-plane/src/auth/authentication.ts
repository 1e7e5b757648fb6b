import type { Request } from 'express';
import type { ApiKeyAuthenticator } from './api-key-authenticator';
import type { Principal } from './principal';

export const AUTHENTICATOR = 'authenticator';

/** tsoa's authentication module: `@Security('api_key', ['apps.read'])` lands here. */
export function expressAuthentication(
  request: Request,
  securityName: string,
  requiredScopes: string[] = [],
): Promise<Principal> {
  const authenticator = request.app.locals[AUTHENTICATOR] as ApiKeyAuthenticator;
  if (securityName !== 'api_key') return Promise.reject(new Error(`Unknown security scheme ${securityName}`));
  return authenticator.authenticate(request.headers.authorization, requiredScopes);
}
