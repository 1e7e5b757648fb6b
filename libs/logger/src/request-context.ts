import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';

interface RequestContext {
  readonly requestId: string;
}

const storage = new AsyncLocalStorage<RequestContext>();

/** Runs `fn` with `requestId` attached to every log line written inside it, however deep. */
export function runWithRequestId<T>(requestId: string, fn: () => T): T {
  return storage.run({ requestId }, fn);
}

/**
 * Runs `fn` outside any request's context: for work shared by many requests (a batched send),
 * whose log lines must not carry the id of whichever request happened to start it.
 */
export function runOutsideRequest<T>(fn: () => T): T {
  return storage.exit(fn);
}

export function currentRequestId(): string | undefined {
  return storage.getStore()?.requestId;
}

// A caller-supplied id is kept only when it is short and plain, so it cannot forge log fields.
const acceptableId = /^[A-Za-z0-9._:-]{1,128}$/;

/** The caller's X-Request-Id when it is acceptable, otherwise a fresh UUID. */
export function requestIdFrom(header: string | string[] | undefined): string {
  const value = Array.isArray(header) ? header[0] : header;
  return value !== undefined && acceptableId.test(value) ? value : randomUUID();
}
