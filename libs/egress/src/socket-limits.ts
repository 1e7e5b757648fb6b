import type { Socket } from 'node:net';

/** A tenant's server sent and took nothing for the idle deadline: closed by us. */
export class ConnectionIdle extends Error {
  // A network code: every caller already reads it as "the server is unavailable, try later".
  readonly code = 'ETIMEDOUT';

  constructor(readonly idleMs: number) {
    super(`the server sent nothing for ${idleMs} ms: connection closed by the client`);
    this.name = 'ConnectionIdle';
  }
}

/** A tenant's server answered one request with more bytes than the process accepts. */
export class AnswerTooLarge extends Error {
  readonly code = 'ANSWER_TOO_LARGE';

  constructor(readonly limitBytes: number) {
    super(`the server answered with more than ${limitBytes} bytes: connection closed by the client`);
    this.name = 'AnswerTooLarge';
  }
}

export interface SocketLimits {
  /** No byte either way for this long: the socket is destroyed (ConnectionIdle). 0: none. */
  idleMs: number;
  /** Bytes received since our last write, at most (AnswerTooLarge). */
  maxAnswerBytes: number;
}

/** 64 MiB: far above any answer read from a customer's server in one request. */
export const defaultMaxAnswerBytes = 67_108_864;

/**
 * Client-side limits on a socket to a server a tenant controls, whose own time limits (a
 * statement_timeout, a request timeout) are the tenant's to disarm: TCP keepalive (a peer that
 * vanished without a FIN is noticed), an idle deadline and a cap on the bytes of one answer
 * (a driver would buffer any length the server declares). Set on the stream the driver reads:
 * the TLS socket when there is one. The deadline is a timer of its own, not socket.setTimeout,
 * which drivers set and reset for their own purposes. Reads and writes both count as activity,
 * so a body we are still sending is not idle, and a server that stops reading it is.
 */
export function limitSocket(socket: Socket, limits: SocketLimits): void {
  socket.setKeepAlive(true, 10_000);
  let timer: NodeJS.Timeout | undefined;
  if (limits.idleMs > 0) {
    // Unref'd, and left to fire after a close (destroying a closed socket does nothing): one
    // timer per socket, gone at the latest idleMs later.
    timer = setTimeout(() => socket.destroy(new ConnectionIdle(limits.idleMs)), limits.idleMs);
    timer.unref();
  }
  let answered = 0;
  const write = socket.write.bind(socket) as (...args: unknown[]) => boolean;
  socket.write = ((...args: unknown[]) => {
    answered = 0;
    timer?.refresh();
    return write(...args);
  }) as Socket['write'];
  socket.on('data', (chunk: Buffer) => {
    timer?.refresh();
    answered += chunk.length;
    if (answered > limits.maxAnswerBytes) socket.destroy(new AnswerTooLarge(limits.maxAnswerBytes));
  });
}
