// Every call of the console: the public API (/api/v1) and the MCP endpoint (/mcp) of the same
// origin, with `Authorization: Bearer <API key>`. The key lives in sessionStorage only (never a
// URL, never a cookie): closing the tab forgets it.

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

async function problemOf(response: Response): Promise<Problem> {
  try {
    const body = (await response.json()) as Partial<Problem>;
    return { ...body, status: response.status };
  } catch {
    return { status: response.status, title: response.statusText };
  }
}

/** Calls the API and returns its JSON body; 401 signs out, other errors throw ApiError. */
export async function api<T>(
  path: string,
  init: { method?: string; body?: unknown; action?: string; accept?: string } = {},
): Promise<T> {
  const response = await fetch(path, {
    method: init.method ?? 'GET',
    headers: headers({
      ...(init.body === undefined ? {} : { 'Content-Type': 'application/json' }),
      ...(init.accept ? { Accept: init.accept } : {}),
    }),
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
    credentials: 'omit',
    cache: 'no-store',
  });
  if (response.status === 401) {
    forgetKey();
    signedOut.forEach((listener) => listener());
  }
  if (!response.ok)
    throw new ApiError(await problemOf(response), init.action ?? `${init.method ?? 'GET'} ${path}`);
  return (await response.json()) as T;
}

/** Checks a key before keeping it: anything but 401 means the key is known. */
export async function checkKey(key: string): Promise<boolean> {
  const response = await fetch('/api/v1/apps?limit=1', {
    headers: { Accept: 'application/json', Authorization: `Bearer ${key}` },
    credentials: 'omit',
    cache: 'no-store',
  });
  return response.status !== 401;
}

/** One tool of the MCP server (JSON-RPC over POST /mcp, stateless): its JSON result. */
export async function mcpTool<T>(name: string, args: Record<string, unknown> = {}): Promise<T> {
  const answer = await api<{
    result?: { content?: { type: string; text?: string }[]; structuredContent?: unknown; isError?: boolean };
    error?: { message: string };
  }>('/mcp', {
    method: 'POST',
    action: name,
    accept: 'application/json, text/event-stream',
    body: { jsonrpc: '2.0', id: Date.now(), method: 'tools/call', params: { name, arguments: args } },
  });
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
  if (response.status === 401) {
    forgetKey();
    signedOut.forEach((listener) => listener());
  }
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
