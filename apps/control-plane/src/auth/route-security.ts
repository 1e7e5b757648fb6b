import type { Router } from 'express';

/** Where expressAuthentication finds a route-security audit instead of a request to authenticate. */
export const ROUTE_SECURITY_AUDIT = 'routeSecurityAudit';

/** One security scheme a route requires, with its scopes, as the route's @Security names it. */
export interface SecurityRequirement {
  name: string;
  scopes: readonly string[];
}

/** A route as the generated RegisterRoutes declares it, with what its authentication asked for. */
export interface AuditedRoute {
  method: string;
  path: string;
  security: SecurityRequirement[];
}

/** What expressAuthentication tells an audit in place of authenticating. */
export interface RouteSecurityAudit {
  record(requirement: SecurityRequirement): void;
}

type Handler = (request: unknown, response: unknown, next: (error?: unknown) => void) => unknown;

const METHODS = ['get', 'post', 'put', 'patch', 'delete', 'head', 'options', 'all'] as const;

/**
 * Registers the routes on a recorder, then calls each route's authentication middleware once
 * with a request that carries an audit: expressAuthentication records the scheme and scopes it
 * was asked for and refuses. tsoa's middleware calls it for every scheme before its first await,
 * so what it asks for is recorded by the time the call returns; its refusal is swallowed.
 */
export function auditRouteSecurity(register: (app: Router) => void): AuditedRoute[] {
  const declared: { method: string; path: string; handlers: Handler[] }[] = [];
  const recorder = Object.fromEntries(
    METHODS.map((method) => [
      method,
      (path: string, ...handlers: Handler[]) => {
        declared.push({ method, path, handlers });
      },
    ]),
  );
  register(recorder as unknown as Router);
  return declared.map(({ method, path, handlers }) => {
    const security: SecurityRequirement[] = [];
    const audit: RouteSecurityAudit = { record: (requirement) => security.push(requirement) };
    const authentication = handlers.find((handler) => handler.name === 'runAuthenticationMiddleware');
    if (authentication) {
      const request = { app: { locals: { [ROUTE_SECURITY_AUDIT]: audit } }, headers: {} };
      const outcome = authentication(request, { writableEnded: true }, () => undefined);
      if (outcome instanceof Promise) outcome.catch(() => undefined);
    }
    return { method, path, security };
  });
}

/**
 * Refuses at start-up a route that would admit every internal caller: an `internal_token`
 * route naming no scope (every() of an empty list is true, so ingestion's token, the
 * internet-facing service's, would open it), and a route under /internal/ with no security.
 */
export function internalRouteProblems(routes: readonly AuditedRoute[]): string[] {
  const problems: string[] = [];
  for (const route of routes) {
    const where = `${route.method.toUpperCase()} ${route.path}`;
    for (const requirement of route.security)
      if (requirement.name === 'internal_token' && requirement.scopes.length === 0)
        problems.push(`${where}: @Security('internal_token') names no scope`);
    if (route.path.startsWith('/internal/') && route.security.length === 0)
      problems.push(`${where}: an internal route without @Security('internal_token', [scope])`);
  }
  return problems;
}

/** Throws, naming each route, when internalRouteProblems finds any. */
export function checkInternalRoutes(register: (app: Router) => void): AuditedRoute[] {
  const routes = auditRouteSecurity(register);
  const problems = internalRouteProblems(routes);
  if (problems.length > 0) throw new Error(`Refusing to start: ${problems.join('; ')}`);
  return routes;
}
