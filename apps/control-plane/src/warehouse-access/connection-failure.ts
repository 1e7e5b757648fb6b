// Socket errors of a connection that could not be made or was lost.
const unreachableErrnos = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
]);
// SQLSTATEs of a warehouse that is not there for us: class 08 (connection exception), 28
// (authentication), 3D000 (the database does not exist), 53300 (too many connections), and
// 57P01-57P03 (shut down, crashed, starting up).
const unavailableStates = /^(08...|28...|3D000|53300|57P0[123])$/;
// pg and pg-pool report a connect timeout or a dropped connection without a code.
const unavailableMessages = /timeout exceeded when trying to connect|Connection terminated/i;

/**
 * Whether a pg error means the warehouse could not be used at all, as opposed to a query that
 * failed (a syntax error, a statement timeout): those stay errors of their own.
 */
export function isWarehouseConnectionFailure(error: unknown): boolean {
  // Read as a shape, not with instanceof: socket errors may come from another realm (a VM
  // context) whose Error is not this one's.
  if (error === null || typeof error !== 'object') return false;
  const { code, message, errors } = error as { code?: unknown; message?: unknown; errors?: unknown };
  // An AggregateError: every address of the host was tried (IPv4 and IPv6) and refused.
  if (Array.isArray(errors) && errors.some(isWarehouseConnectionFailure)) return true;
  if (typeof code === 'string' && (unreachableErrnos.has(code) || unavailableStates.test(code))) return true;
  return typeof message === 'string' && unavailableMessages.test(message);
}
