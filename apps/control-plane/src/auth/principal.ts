import type { Request } from 'express';
import type { Scope } from './scopes';

/** Who is calling: the account every query of the request is scoped to. */
export interface Principal {
  accountId: string;
  apiKeyId: string;
  scopes: readonly Scope[];
  features: readonly string[];
}

/** tsoa stores the value expressAuthentication resolved as `request.user`. */
export function principalOf(request: Request): Principal {
  const principal = (request as Request & { user?: Principal }).user;
  if (!principal) throw new Error('principalOf called on an unauthenticated route');
  return principal;
}
