import { invalidField } from './api-errors';

export const DEFAULT_LIMIT = 20;
export const MAX_LIMIT = 100;

/** The envelope beside `data` in every list response. */
export interface Pagination {
  /** Items matching the filters, across all pages. */
  total: number;
  limit: number;
  offset: number;
  /** The `offset` of the next page, or null on the last page. */
  nextOffset: number | null;
}

export interface ListResponse<T> {
  data: T[];
  pagination: Pagination;
}

export type SortOrder = 'asc' | 'desc';

export interface PageRequest {
  limit: number;
  offset: number;
}

/** Validates limit (1-100, default 20) and offset (0 or more, default 0): no silent defaults. */
export function pageRequest(limit: number | undefined, offset: number | undefined): PageRequest {
  if (limit !== undefined && (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT)) {
    throw invalidField('query.limit', `must be an integer from 1 to ${MAX_LIMIT}`);
  }
  if (offset !== undefined && (!Number.isInteger(offset) || offset < 0)) {
    throw invalidField('query.offset', 'must be an integer of 0 or more');
  }
  return { limit: limit ?? DEFAULT_LIMIT, offset: offset ?? 0 };
}

export function listResponse<T>(data: T[], total: number, page: PageRequest): ListResponse<T> {
  const next = page.offset + data.length;
  return {
    data,
    pagination: { total, limit: page.limit, offset: page.offset, nextOffset: next < total ? next : null },
  };
}
