import type { WarehouseErrorClass } from '../warehouse-engine';

// ClickHouse's error codes (src/Common/ErrorCodes.cpp), grouped by what they mean for the rows
// that met them. The client reports a server error as ClickHouseError with `code` as text.

/** The rows cannot be stored: a value the column refuses. */
const dataCodes = new Set([
  6, // CANNOT_PARSE_TEXT
  25, // CANNOT_PARSE_ESCAPE_SEQUENCE
  26, // CANNOT_PARSE_QUOTED_STRING
  27, // CANNOT_PARSE_INPUT_ASSERTION_FAILED
  38, // CANNOT_PARSE_DATE
  41, // CANNOT_PARSE_DATETIME
  53, // TYPE_MISMATCH
  69, // ARGUMENT_OUT_OF_BOUND
  70, // CANNOT_CONVERT_TYPE
  72, // CANNOT_PARSE_NUMBER
  117, // INCORRECT_DATA
  131, // TOO_LARGE_STRING_SIZE
  321, // VALUE_IS_OUT_OF_RANGE_OF_DATA_TYPE
  349, // CANNOT_INSERT_NULL_IN_ORDINARY_COLUMN
  407, // DECIMAL_OVERFLOW
]);

/** The server cannot take anything now; the rows wait. */
const unavailableCodes = new Set([
  159, // TIMEOUT_EXCEEDED
  160, // TOO_SLOW
  202, // TOO_MANY_SIMULTANEOUS_QUERIES
  203, // NO_FREE_CONNECTION
  209, // SOCKET_TIMEOUT
  210, // NETWORK_ERROR
  225, // NO_ZOOKEEPER
  236, // ABORTED
  241, // MEMORY_LIMIT_EXCEEDED
  242, // TABLE_IS_READ_ONLY (a replica without its keeper session)
  252, // TOO_MANY_PARTS
  319, // UNKNOWN_STATUS_OF_INSERT
  394, // QUERY_WAS_CANCELLED
  425, // SYSTEM_ERROR
  439, // CANNOT_SCHEDULE_TASK
  473, // DEADLOCK_AVOIDED
  999, // KEEPER_EXCEPTION
]);

/** It answers but refuses us: nothing works until somebody fixes the server or the grant. */
const misconfiguredCodes = new Set([
  81, // UNKNOWN_DATABASE
  164, // READONLY
  192, // UNKNOWN_USER
  193, // WRONG_PASSWORD
  194, // REQUIRED_PASSWORD
  195, // IP_ADDRESS_NOT_ALLOWED
  291, // DATABASE_ACCESS_DENIED
  497, // ACCESS_DENIED
  516, // AUTHENTICATION_FAILED
  701, // CLUSTER_DOESNT_EXIST
]);

/** Socket errors: the server is down or the network between us is. */
const networkCodes = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
  'UND_ERR_SOCKET',
]);

/** TLS failures: the server's certificate or protocol is not what the connection asks for. */
const tlsCode = /^(ERR_TLS_|ERR_SSL_|CERT_|DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT|UNABLE_TO_)/;

function serverCode(error: { code?: unknown; type?: unknown }): number | undefined {
  // ClickHouseError: a numeric code as text, and the error's name in `type`.
  if (typeof error.type !== 'string' || typeof error.code !== 'string') return undefined;
  const code = Number(error.code);
  return Number.isInteger(code) ? code : undefined;
}

/** What a ClickHouse error means for the rows that met it (WarehouseErrorClass). */
export function clickhouseErrorKind(error: unknown): WarehouseErrorClass {
  if (error === null || typeof error !== 'object') return 'unexpected';
  const e = error as { code?: unknown; type?: unknown; name?: unknown; message?: unknown; cause?: unknown };
  // A value JSON cannot carry (copy-text's UnserializableValue, SQLSTATE 22000): the row alone.
  if (e.code === '22000') return 'data';
  // The egress guard refused the customer's address: their configuration, not our bug.
  if (e.name === 'EgressRefused') return 'misconfigured';
  const code = serverCode(e);
  if (code !== undefined) {
    if (dataCodes.has(code)) return 'data';
    if (unavailableCodes.has(code)) return 'unavailable';
    if (misconfiguredCodes.has(code)) return 'misconfigured';
    return 'unexpected';
  }
  if (typeof e.code === 'string') {
    if (networkCodes.has(e.code)) return 'unavailable';
    if (tlsCode.test(e.code)) return 'misconfigured';
  }
  // The client's own request timeout, and an answer that is not ClickHouse's (a proxy's 5xx).
  if (typeof e.message === 'string' && /^(Timeout error|socket hang up)/.test(e.message))
    return 'unavailable';
  // An error without a cause ends here too: undefined is unexpected.
  return e.cause === error ? 'unexpected' : clickhouseErrorKind(e.cause);
}
