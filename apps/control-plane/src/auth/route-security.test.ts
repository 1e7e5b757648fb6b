import type { Request, Router } from 'express';
import { AppError } from '@pipeline/errors';
import { RegisterRoutes } from '../generated/routes';
import { expressAuthentication, INTERNAL_TOKENS } from './authentication';
import { InternalTokens } from './internal-tokens';
import {
  auditRouteSecurity,
  checkInternalRoutes,
  ROUTE_SECURITY_AUDIT,
  type RouteSecurityAudit,
} from './route-security';

/**
 * What tsoa's generated RegisterRoutes does for a route with @Security: a middleware named
 * runAuthenticationMiddleware that asks expressAuthentication for each scheme before it awaits.
 */
function tsoaStyleRoute(method: 'get' | 'post', path: string, security: Record<string, string[]>[]) {
  return (app: Router) => {
    const handlers: ((request: Request, response: unknown, next: (error?: unknown) => void) => unknown)[] =
      [];
    if (security.length > 0)
      handlers.push(async function runAuthenticationMiddleware(request, _response, next) {
        const asked = security.flatMap((requirement) =>
          Object.entries(requirement).map(([name, scopes]) => expressAuthentication(request, name, scopes)),
        );
        try {
          await Promise.any(asked);
          next();
        } catch (error) {
          next(error);
        }
      });
    handlers.push(function handler() {
      return undefined;
    });
    app[method](path, ...handlers);
  };
}

const INGESTION = 'i'.repeat(40);
const WAREHOUSE = 'w'.repeat(40);

describe('internal routes and their scopes (security review 2026-11-29, finding 10)', () => {
  it('finds every generated internal route naming its one scope, and starts', () => {
    const routes = checkInternalRoutes(RegisterRoutes);
    const internal = routes
      .filter((route) => route.path.startsWith('/internal/'))
      .map((route) => `${route.method} ${route.path} ${JSON.stringify(route.security)}`)
      .sort();
    expect(internal).toEqual([
      'post /internal/v1/regulated-subjects [{"name":"internal_token","scopes":["regulations.subjects"]}]',
      'post /internal/v1/tracking-plan-versions [{"name":"internal_token","scopes":["tracking_plans.versions"]}]',
      'post /internal/v1/warehouses/:warehouseId/status [{"name":"internal_token","scopes":["warehouses.report"]}]',
      'post /internal/v1/warehouses/resolve [{"name":"internal_token","scopes":["warehouses.resolve"]}]',
      'post /internal/v1/write-keys/lookup [{"name":"internal_token","scopes":["write_keys.lookup"]}]',
      'post /internal/v1/write-keys/resolve [{"name":"internal_token","scopes":["write_keys.resolve"]}]',
    ]);
    // The audit reads the other schemes too: an API-key route with its scope.
    expect(routes.find((route) => route.method === 'get' && route.path === '/api/v1/apps')?.security).toEqual(
      [{ name: 'api_key', scopes: ['apps.read'] }],
    );
  });

  it('refuses to start with an internal_token route that names no scope, naming the route', () => {
    const register = tsoaStyleRoute('post', '/internal/v1/open', [{ internal_token: [] }]);
    expect(auditRouteSecurity(register)).toEqual([
      { method: 'post', path: '/internal/v1/open', security: [{ name: 'internal_token', scopes: [] }] },
    ]);
    expect(() => checkInternalRoutes(register)).toThrow(
      "Refusing to start: POST /internal/v1/open: @Security('internal_token') names no scope",
    );
  });

  it('refuses to start with a route under /internal/ that has no security at all', () => {
    expect(() => checkInternalRoutes(tsoaStyleRoute('get', '/internal/v1/bare', []))).toThrow(
      "Refusing to start: GET /internal/v1/bare: an internal route without @Security('internal_token', [scope])",
    );
    // A public route without security (health) is none of this check's business.
    expect(checkInternalRoutes(tsoaStyleRoute('get', '/health', []))).toEqual([
      { method: 'get', path: '/health', security: [] },
    ]);
  });

  it('names every refused route in one error', () => {
    const register = (app: Router) => {
      tsoaStyleRoute('post', '/internal/v1/open', [{ internal_token: [] }])(app);
      tsoaStyleRoute('get', '/internal/v1/bare', [])(app);
    };
    expect(() => checkInternalRoutes(register)).toThrow(
      "Refusing to start: POST /internal/v1/open: @Security('internal_token') names no scope; " +
        "GET /internal/v1/bare: an internal route without @Security('internal_token', [scope])",
    );
  });

  it("calls a route's authentication only, wherever it sits among the handlers, never the route itself", () => {
    const called: string[] = [];
    const register = (app: Router) => {
      // A route without security: the audit has nothing to ask and must not run its handler.
      app.get('/health', function health() {
        called.push('health');
      });
      app.post(
        '/internal/v1/thing',
        function parse() {
          called.push('parse');
        },
        function runAuthenticationMiddleware(request: Request) {
          const audit = request.app.locals[ROUTE_SECURITY_AUDIT] as RouteSecurityAudit;
          audit.record({ name: 'internal_token', scopes: ['things.read'] });
          called.push('authentication');
        },
        function handler() {
          called.push('handler');
        },
      );
    };
    expect(auditRouteSecurity(register)).toEqual([
      { method: 'get', path: '/health', security: [] },
      {
        method: 'post',
        path: '/internal/v1/thing',
        security: [{ name: 'internal_token', scopes: ['things.read'] }],
      },
    ]);
    expect(called).toEqual(['authentication']);
  });

  it('tells the authentication the response has ended, so tsoa never goes on to the controller', () => {
    const responses: unknown[] = [];
    auditRouteSecurity((app: Router) => {
      app.get('/api/v1/thing', function runAuthenticationMiddleware(_request: Request, response: unknown) {
        responses.push(response);
      });
    });
    expect(responses).toEqual([{ writableEnded: true }]);
  });

  it('swallows an authentication that refuses asynchronously, and takes one that answers at once', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    try {
      const routes = auditRouteSecurity((app: Router) => {
        app.get('/api/v1/sync', function runAuthenticationMiddleware(request: Request) {
          (request.app.locals[ROUTE_SECURITY_AUDIT] as RouteSecurityAudit).record({
            name: 'api_key',
            scopes: [],
          });
          return undefined;
        });
        app.get('/api/v1/async', async function runAuthenticationMiddleware(request: Request) {
          (request.app.locals[ROUTE_SECURITY_AUDIT] as RouteSecurityAudit).record({
            name: 'api_key',
            scopes: ['a'],
          });
          throw new Error('refused');
        });
      });
      expect(routes.map((route) => route.security)).toEqual([
        [{ name: 'api_key', scopes: [] }],
        [{ name: 'api_key', scopes: ['a'] }],
      ]);
      // Node reports an unhandled rejection once the microtasks have run: a macrotask later.
      await new Promise((resolve) => setImmediate(resolve));
      await new Promise((resolve) => setImmediate(resolve));
      expect(unhandled).toEqual([]);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });

  it('admits no internal token on a route that names no scope, a known one included', async () => {
    const tokens = new InternalTokens([
      { token: INGESTION, caller: { caller: 'ingestion' } },
      { token: WAREHOUSE, caller: { caller: 'warehouse' } },
    ]);
    const request = (token: string) =>
      ({
        app: { locals: { [INTERNAL_TOKENS]: tokens } },
        headers: { authorization: `Bearer ${token}` },
      }) as unknown as Request;

    for (const token of [INGESTION, WAREHOUSE]) {
      const refused = await expressAuthentication(request(token), 'internal_token', []).catch(
        (e: unknown) => e,
      );
      expect(refused).toBeInstanceOf(AppError);
      expect(refused).toMatchObject({ status: 401, code: 'invalid_service_token' });
      await expect(expressAuthentication(request(token), 'internal_token')).rejects.toMatchObject({
        code: 'invalid_service_token',
      });
    }
    await expect(
      expressAuthentication(request(INGESTION), 'internal_token', ['write_keys.resolve']),
    ).resolves.toEqual({ service: 'internal', caller: { caller: 'ingestion' } });
  });
});
