import type { WarehouseErrorClass } from './warehouse-engine';
import { warehouseErrorKind } from './warehouse-errors';

// What a PostgreSQL warehouse's error means for the rows that met it: pure, so the verdict that
// decides between dead-lettering and parking is checked without a database.

// SQLSTATEs of a warehouse that answers but refuses us: login refused (28000, 28P01), database
// or schema missing (3D000, 3F000), permission denied (42501). Retrying cannot help until
// somebody fixes the warehouse or its credentials.
const misconfiguredStates = new Set(['28000', '28P01', '3D000', '3F000', '42501']);
// TLS that cannot be agreed: the server has none while we require it, or its certificate does
// not verify (untrusted, expired, another host's). Node's codes, and node-postgres's message.
const tlsRefusals = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_HAS_EXPIRED',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);
const noTlsMessage = /does not support SSL connections/;

/**
 * `misconfigured` for a refusal that only a fix of the warehouse or its connection ends, and
 * otherwise what warehouseErrorKind says (data, unavailable, unexpected). An AggregateError
 * (every address of the host tried) is unavailable when one of its errors is.
 */
export function warehouseErrorClass(error: unknown): WarehouseErrorClass {
  const { code, errors, message } = (error ?? {}) as { code?: unknown; errors?: unknown; message?: unknown };
  if (typeof code === 'string' && (misconfiguredStates.has(code) || tlsRefusals.has(code)))
    return 'misconfigured';
  if (typeof message === 'string' && noTlsMessage.test(message)) return 'misconfigured';
  if (Array.isArray(errors) && errors.some((e) => warehouseErrorClass(e) === 'unavailable'))
    return 'unavailable';
  return warehouseErrorKind(error);
}
