/** TypeORM answers `UPDATE ... RETURNING` on PostgreSQL with `[rows, count]`, a SELECT with rows. */
export function returnedRows<R>(result: unknown): R[] {
  if (
    Array.isArray(result) &&
    result.length === 2 &&
    Array.isArray(result[0]) &&
    typeof result[1] === 'number'
  ) {
    return result[0] as R[];
  }
  return result as R[];
}
