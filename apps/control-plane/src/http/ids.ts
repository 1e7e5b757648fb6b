import { notFound } from './api-errors';

const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** An id that cannot exist is a 404 like any other unknown id, never a database error. */
export function requireId(resource: string, id: string): string {
  if (!uuid.test(id)) throw notFound(resource, id);
  return id.toLowerCase();
}

export const isUuid = (value: string) => uuid.test(value);
