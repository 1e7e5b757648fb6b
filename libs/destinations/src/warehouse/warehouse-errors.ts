import type { WarehouseErrorClass } from './warehouse-engine';

/**
 * What a warehouse error means for the batch that met it (docs/delivery-and-destinations.md, "What happens to bad data"):
 * - `data`: the rows themselves cannot be stored (SQLSTATE class 22 data exception, 23
 *   integrity constraint violation, 54 program limit such as a value nested too deep). Retrying
 *   cannot help: the rows are isolated and dead-lettered.
 * - `unavailable`: the warehouse cannot take anything now (refused or lost connections, class
 *   08 connection exception, 40 transaction rollback, 53 insufficient resources, 55P03 lock
 *   not available, 57 operator intervention such as statement_timeout or a shutdown, 58 system
 *   error). Its records are parked until it answers again.
 * - `misconfigured`: it answers but refuses us: login refused (28000, 28P01), the database or
 *   schema missing (3D000, 3F000), permission denied (42501), or its TLS certificate or mode
 *   not what the connection asks for. Only somebody changing the warehouse or its connection
 *   helps: its records are parked and its status says so. Such a state is the customer's to
 *   cause on their own server, so it must never stop the consumer every account shares.
 * - `unexpected`: anything else, a bug; the consumer process exits so that an operator sees it.
 *   A missing table (42P01) stays here: the tables are ours, created by ensureAccount before
 *   any write, so on a platform warehouse their absence is a bug of ours (or an operator who
 *   dropped one: the restart recreates it). On a customer-owned warehouse the destination
 *   treats every unexpected error as misconfigured instead (warehouse-destination.ts), since
 *   a customer may drop our table at any time.
 */
export type WarehouseErrorKind = WarehouseErrorClass;

const dataClasses = new Set(['22', '23', '54']);
const unavailableClasses = new Set(['08', '40', '53', '57', '58']);
const misconfiguredStates = new Set(['28000', '28P01', '3D000', '3F000', '42501']);
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
// Node's TLS verification failures: the server's certificate is not what the connection's
// tlsMode demands, which waiting does not change.
const tlsCodes = new Set([
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_HAS_EXPIRED',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);
// node-postgres reports a lost or unobtainable connection with these messages and no code.
const connectionMessages =
  /Connection terminated|connection timeout|timeout exceeded when trying to connect|not queryable|Client was closed/i;
// ...and a server without TLS, asked for it, with this one.
const tlsMessages = /does not support SSL connections/i;

export function warehouseErrorKind(error: unknown): WarehouseErrorKind {
  const { code, message, errors } = (error ?? {}) as { code?: unknown; message?: unknown; errors?: unknown };
  // An AggregateError: every address of the host was tried; unavailable when one of them is.
  if (Array.isArray(errors) && errors.some((e) => warehouseErrorKind(e) === 'unavailable'))
    return 'unavailable';
  if (typeof code === 'string') {
    // Before the SQLSTATE shape: EPIPE is five capitals too.
    if (networkCodes.has(code)) return 'unavailable';
    if (tlsCodes.has(code)) return 'misconfigured';
    if (/^[0-9A-Z]{5}$/.test(code)) {
      if (code === '55P03') return 'unavailable';
      if (misconfiguredStates.has(code)) return 'misconfigured';
      const sqlClass = code.slice(0, 2);
      if (dataClasses.has(sqlClass)) return 'data';
      if (unavailableClasses.has(sqlClass)) return 'unavailable';
      return 'unexpected';
    }
  }
  if (typeof message === 'string') {
    if (connectionMessages.test(message)) return 'unavailable';
    if (tlsMessages.test(message)) return 'misconfigured';
  }
  return 'unexpected';
}

/** The error's SQLSTATE and message, for a dead letter's reason. */
export function describeWarehouseError(error: unknown): string {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  const text = typeof message === 'string' ? message : String(error);
  return typeof code === 'string' ? `${code} ${text}` : text;
}

/**
 * The text with every occurrence of the secrets cut out (also URL-encoded): a driver's message
 * may quote what it was given, and a log line or a dead letter's reason must never carry a
 * warehouse's password.
 */
export function redactSecrets(text: string, secrets: readonly string[]): string {
  let redacted = text;
  for (const secret of secrets) {
    if (secret.length === 0) continue;
    for (const form of new Set([secret, encodeURIComponent(secret)]))
      redacted = redacted.split(form).join('[redacted]');
  }
  return redacted;
}
