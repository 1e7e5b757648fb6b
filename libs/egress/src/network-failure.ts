/** A request that got no answer, as a tenant may see it (`category`) and as logs keep it. */
export interface NetworkFailure {
  /**
   * address_refused, dns_lookup_failed, connection_refused, connection_reset, connect_timeout,
   * tls_error or network_error. Never the address or the remote text: a refused internal
   * address must not tell the tenant what is behind it.
   */
  category: string;
  /** The socket error's code and message, for logs only. */
  detail: string;
}

/** Reads a fetch rejection ("fetch failed", with the socket's error as its cause). */
export function describeNetworkFailure(error: unknown): NetworkFailure {
  const { cause, message } = (error ?? {}) as {
    cause?: { code?: unknown; message?: unknown };
    message?: unknown;
  };
  const code = cause && typeof cause.code === 'string' ? cause.code : undefined;
  const text = cause && typeof cause.message === 'string' ? cause.message : message;
  const detail = [code, typeof text === 'string' ? text : String(error)].filter(Boolean).join(': ');
  return { category: categoryOf(code), detail };
}

function categoryOf(code: string | undefined): string {
  if (code === 'EGRESS_REFUSED') return 'address_refused';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return 'dns_lookup_failed';
  if (code === 'ECONNREFUSED') return 'connection_refused';
  if (code === 'ECONNRESET' || code === 'UND_ERR_SOCKET' || code === 'EPIPE') return 'connection_reset';
  if (code === 'UND_ERR_CONNECT_TIMEOUT' || code === 'ETIMEDOUT') return 'connect_timeout';
  if (/CERT|SSL|TLS/.test(String(code))) return 'tls_error';
  return 'network_error';
}
