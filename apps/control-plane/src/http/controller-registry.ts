import type { Request } from 'express';
import type { IocContainer, ServiceIdentifier } from '@tsoa/runtime';

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
      return instance as T;
    },
  };
}
