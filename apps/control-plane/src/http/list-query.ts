import type { ObjectLiteral, SelectQueryBuilder } from 'typeorm';
import { listResponse, type ListResponse, type PageRequest, type SortOrder } from './pagination';
import type { ResourceState } from './resource-state';

/** Lists hide deleted rows unless `state=deleted` (or another state) is asked for. */
export function whereState<T extends ObjectLiteral>(
  qb: SelectQueryBuilder<T>,
  state: ResourceState | undefined,
): void {
  if (state) qb.andWhere(`${qb.alias}.state = :state`, { state });
  else qb.andWhere(`${qb.alias}.state <> 'deleted'`);
}

/** Sorts (nulls last, id as tie-breaker so pages are stable), pages, counts and maps. */
export async function pageOf<T extends ObjectLiteral, R>(
  qb: SelectQueryBuilder<T>,
  sortProperty: string,
  order: SortOrder | undefined,
  page: PageRequest,
  toItem: (row: T) => R,
): Promise<ListResponse<R>> {
  const direction = order === 'asc' ? 'ASC' : 'DESC';
  qb.orderBy(`${qb.alias}.${sortProperty}`, direction, 'NULLS LAST')
    .addOrderBy(`${qb.alias}.id`, direction)
    .skip(page.offset)
    .take(page.limit);
  const [rows, total] = await qb.getManyAndCount();
  return listResponse(rows.map(toItem), total, page);
}

export const iso = (date: Date) => date.toISOString();
export const isoOrNull = (date: Date | null) => (date ? date.toISOString() : null);
