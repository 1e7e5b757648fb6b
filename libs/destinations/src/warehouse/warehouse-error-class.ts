import type { WarehouseErrorClass } from './warehouse-engine';
import { warehouseErrorKind } from './warehouse-errors';

// What a PostgreSQL warehouse's error means for the rows that met it: pure, so the verdict that
// decides between dead-lettering and parking is checked without a database.

/**
 * What warehouseErrorKind says (data, unavailable, misconfigured, unexpected), except that an
 * AggregateError (every address of the host tried) is unavailable when one of its errors is.
 */
export function warehouseErrorClass(error: unknown): WarehouseErrorClass {
  const { errors } = (error ?? {}) as { errors?: unknown };
  if (Array.isArray(errors) && errors.some((e) => warehouseErrorClass(e) === 'unavailable'))
    return 'unavailable';
  return warehouseErrorKind(error);
}
