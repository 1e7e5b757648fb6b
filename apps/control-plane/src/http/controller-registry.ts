import type { Request } from 'express';
import { Controller, type IocContainer, type ServiceIdentifier } from '@tsoa/runtime';

/**
 * tsoa's IoC hook: each app instance carries its own controllers (built with their
 * dependencies in createApp), so two apps in one process, as in tests, never share state.
 */
export type ControllerRegistry = Map<abstract new (...args: never[]) => unknown, unknown>;

export const CONTROLLERS = 'controllers';

export function iocContainer(request: Request): IocContainer {
  const registry = request.app.locals[CONTROLLERS] as ControllerRegistry;
  return {
    get<T>(controller: ServiceIdentifier<T>): T {
      const instance = registry.get(controller as abstract new (...args: never[]) => unknown);
      if (!instance) throw new Error('Controller not registered in createApp');
      return (instance instanceof Controller ? perRequest(instance) : instance) as T;
    },
  };
}

/**
 * A copy of `controller` for one request: tsoa keeps the answer's status and headers on the
 * controller object, so two requests in flight on one shared instance could answer with each
 * other's (a create's 201 on a concurrent read). The copy shares the class (tsoa finds the
 * handler on its prototype) and the services, and has a status and headers of its own.
 */
function perRequest(controller: Controller): Controller {
  const copy = Object.assign(
    Object.create(Object.getPrototypeOf(controller) as object) as Controller,
    controller,
  );
  Object.assign(copy, { statusCode: undefined, headers: {} });
  return copy;
}
