// Every call of the console: the public API (/api/v1) and the MCP endpoint (/mcp) of the same
// origin, with `Authorization: Bearer <API key>`. The key lives in sessionStorage only (never a
// URL, never a cookie): closing the tab forgets it.

import createClient from 'openapi-fetch';
import type { paths } from './generated/openapi';

const KEY_ITEM = 'pipeline.console.apiKey';

export function storedKey(): string | null {
  return sessionStorage.getItem(KEY_ITEM);
}

export function storeKey(key: string): void {
  sessionStorage.setItem(KEY_ITEM, key);
}

export function forgetKey(): void {
  sessionStorage.removeItem(KEY_ITEM);
}

/** Listeners told when the API answered 401: the app returns to sign-in. */
const signedOut = new Set<() => void>();
export function onSignedOut(listener: () => void): () => void {
  signedOut.add(listener);
  return () => signedOut.delete(listener);
}

export interface Problem {
  status: number;
  code?: string;
  title?: string;
  detail?: string;
  errors?: { path?: string; message?: string; code?: string }[];
}

/** An answer other than 2xx, with the API's problem document when it sent one. */
export class ApiError extends Error {
  constructor(
    readonly problem: Problem,
    readonly action: string,
  ) {
    super(problem.detail ?? problem.title ?? `HTTP ${problem.status}`);
  }

  get forbidden(): boolean {
    return this.problem.status === 403;
  }

  /** The scope a 403 names ("This API key lacks the scope write_keys.read"), if any. */
  get scope(): string | null {
    const match = /scope (\S+)/.exec(this.problem.detail ?? '');
    return match?.[1] ?? null;
  }
}

function headers(extra?: Record<string, string>): Record<string, string> {
  const key = storedKey();
  return { Accept: 'application/json', ...(key ? { Authorization: `Bearer ${key}` } : {}), ...extra };
}

function signOutOn(response: Response): void {
  if (response.status !== 401) return;
  forgetKey();
  signedOut.forEach((listener) => listener());
}

async function problemOf(response: Response): Promise<Problem> {
  try {
    const body = (await response.json()) as Partial<Problem>;
    return { ...body, status: response.status };
  } catch {
    return { status: response.status, title: response.statusText };
  }
}

/**
 * The public API, typed by its own OpenAPI document (generated/openapi.ts, made from
 * docs/openapi.json by the build): a path, parameter or field the API no longer has fails the
 * console's type-check instead of a page at run time.
 */
export const client = createClient<paths>({
  credentials: 'omit',
  cache: 'no-store',
  // URLSearchParams, as the console always wrote its query strings (a space is `+`).
  querySerializer: (query) =>
    new URLSearchParams(
      Object.entries(query ?? {}).flatMap(([name, value]) =>
        value === undefined || value === null ? [] : [[name, String(value)]],
      ),
    ).toString(),
});
client.use({
  onRequest({ request }) {
    // Read at each request: signing in or out changes the key between calls.
    for (const [name, value] of Object.entries(headers())) request.headers.set(name, value);
  },
  onResponse({ response }) {
    signOutOn(response);
  },
});

/** The data of a `client` call; 401 has signed out already, other errors throw ApiError. */
export async function call<T>(
  action: string,
  answer: Promise<{ data?: T; error?: unknown; response: Response }>,
): Promise<T> {
  const { data, error, response } = await answer;
  if (!response.ok) {
    // openapi-fetch has read the body already: the parsed JSON, or its text when it was not JSON.
    const problem: Problem =
      typeof error === 'object' && error !== null
        ? { ...(error as Partial<Problem>), status: response.status }
        : { status: response.status, title: response.statusText };
    throw new ApiError(problem, action);
  }
  return data as T;
}

/** Checks a key before keeping it: GET /api/v1/me answers any known key, 401 an unknown one. */
export async function checkKey(key: string): Promise<boolean> {
  const response = await fetch('/api/v1/me', {
    headers: { Accept: 'application/json', Authorization: `Bearer ${key}` },
    credentials: 'omit',
    cache: 'no-store',
  });
  return response.status !== 401;
}

/**
 * One tool of the MCP server (JSON-RPC over POST /mcp, stateless): its JSON result. /mcp is not
 * part of the OpenAPI document, so this call and the shapes it returns are written by hand.
 */
export async function mcpTool<T>(name: string, args: Record<string, unknown> = {}): Promise<T> {
  const response = await fetch('/mcp', {
    method: 'POST',
    headers: headers({ 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' }),
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: Date.now(),
      method: 'tools/call',
      params: { name, arguments: args },
    }),
    credentials: 'omit',
    cache: 'no-store',
  });
  signOutOn(response);
  if (!response.ok) throw new ApiError(await problemOf(response), name);
  const answer = (await response.json()) as {
    result?: { content?: { type: string; text?: string }[]; structuredContent?: unknown; isError?: boolean };
    error?: { message: string };
  };
  if (answer.error) throw new ApiError({ status: 400, detail: answer.error.message }, name);
  const text = answer.result?.content?.find((c) => c.type === 'text')?.text;
  const parsed: unknown = answer.result?.structuredContent ?? (text ? safeJson(text) : undefined);
  if (answer.result?.isError) {
    const problem = (parsed ?? {}) as Partial<Problem>;
    throw new ApiError({ ...problem, status: problem.status ?? 400 }, name);
  }
  return parsed as T;
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/**
 * Reads a text/event-stream with fetch (EventSource cannot send the Authorization header),
 * calling `onEvent` for each `data:` message, until `signal` aborts. Resumes with
 * Last-Event-ID after a dropped connection.
 */
export async function readEventStream(
  path: string,
  onEvent: (data: string, id: string | null) => void,
  signal: AbortSignal,
  lastEventId: string | null,
  onOpen: () => void = () => undefined,
): Promise<string | null> {
  const response = await fetch(path, {
    headers: headers({
      Accept: 'text/event-stream',
      ...(lastEventId ? { 'Last-Event-ID': lastEventId } : {}),
    }),
    credentials: 'omit',
    cache: 'no-store',
    signal,
  });
  signOutOn(response);
  if (!response.ok || !response.body) throw new ApiError(await problemOf(response), `GET ${path}`);
  onOpen();
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  let last = lastEventId;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return last;
    buffer += value.replace(/\r\n?/g, '\n');
    let end: number;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let id: string | null = null;
      const data: string[] = [];
      for (const line of block.split('\n')) {
        if (line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        const fieldValue = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'id') id = fieldValue;
        else if (field === 'data') data.push(fieldValue);
      }
      if (id !== null) last = id;
      if (data.length > 0) onEvent(data.join('\n'), id);
    }
  }
}
