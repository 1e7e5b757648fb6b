/**
 * What a warehouse error means for the batch that met it (docs/delivery-and-destinations.md, "What happens to bad data"):
 * - `data`: the rows themselves cannot be stored (SQLSTATE class 22 data exception, 23
 *   integrity constraint violation, 54 program limit such as a value nested too deep). Retrying
 *   cannot help: the rows are isolated and dead-lettered.
 * - `unavailable`: the warehouse cannot take anything now (refused or lost connections, class
 *   08 connection exception, 40 transaction rollback, 53 insufficient resources, 55P03 lock
 *   not available, 57 operator intervention such as statement_timeout or a shutdown, 58 system
 *   error). The batch stays uncommitted and is tried again.
 * - `unexpected`: anything else (a missing table, a bug); the consumer process exits so that
 *   it is restarted and an operator sees it.
 */
export type WarehouseErrorKind = 'data' | 'unavailable' | 'unexpected';

const dataClasses = new Set(['22', '23', '54']);
const unavailableClasses = new Set(['08', '40', '53', '57', '58']);
const networkCodes = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);
// node-postgres reports a lost or unobtainable connection with these messages and no code.
const connectionMessages =
  /Connection terminated|connection timeout|timeout exceeded when trying to connect|not queryable|Client was closed/i;

export function warehouseErrorKind(error: unknown): WarehouseErrorKind {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  if (typeof code === 'string') {
    // Before the SQLSTATE shape: EPIPE is five capitals too.
    if (networkCodes.has(code)) return 'unavailable';
    if (/^[0-9A-Z]{5}$/.test(code)) {
      if (code === '55P03') return 'unavailable';
      const sqlClass = code.slice(0, 2);
      if (dataClasses.has(sqlClass)) return 'data';
      if (unavailableClasses.has(sqlClass)) return 'unavailable';
      return 'unexpected';
    }
  }
  if (typeof message === 'string' && connectionMessages.test(message)) return 'unavailable';
  return 'unexpected';
}

/** The error's SQLSTATE and message, for a dead letter's reason. */
export function describeWarehouseError(error: unknown): string {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  const text = typeof message === 'string' ? message : String(error);
  return typeof code === 'string' ? `${code} ${text}` : text;
}
