import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useState } from 'preact/hooks';
import { ApiError } from './api';

export type Loaded<T> =
  { state: 'loading' } | { state: 'done'; value: T } | { state: 'error'; error: unknown };

/** Loads `load()` on mount and whenever `deps` change; `reload` loads again. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): [Loaded<T>, () => void] {
  const [loaded, setLoaded] = useState<Loaded<T>>({ state: 'loading' });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    load().then(
      (value) => live && setLoaded({ state: 'done', value }),
      (error: unknown) => live && setLoaded({ state: 'error', error }),
    );
    return () => {
      live = false;
    };
  }, [...deps, tick]);
  return [loaded, useCallback(() => setTick((t) => t + 1), [])];
}

/** Rows picked by id: `toggle` adds or removes some at once (a row, or "select all"), `clear` empties. */
export function useSelection(): {
  selected: ReadonlySet<string>;
  toggle: (ids: readonly string[], on: boolean) => void;
  clear: () => void;
} {
  const [selected, setSelected] = useState<ReadonlySet<string>>(new Set());
  const toggle = useCallback(
    (ids: readonly string[], on: boolean) =>
      setSelected((current) => {
        const next = new Set(current);
        for (const id of ids)
          if (on) next.add(id);
          else next.delete(id);
        return next;
      }),
    [],
  );
  const clear = useCallback(() => setSelected(new Set()), []);
  return { selected, toggle, clear };
}

/** What a failed call shows: "not allowed" with the scope for a 403, else the API's message. */
export function ErrorNotice({ error }: { error: unknown }) {
  if (error instanceof ApiError && error.forbidden) {
    const code = error.problem.code;
    if (code === 'feature_not_enabled')
      return (
        <p class="notice forbidden" role="alert">
          This account does not have the feature this page needs ({error.message}).
        </p>
      );
    return (
      <p class="notice forbidden" role="alert">
        This API key is not allowed to {error.action}
        {error.scope ? (
          <>
            {' '}
            (it needs the scope <code>{error.scope}</code>)
          </>
        ) : null}
        . Sign in with a key that has it, or ask for one.
      </p>
    );
  }
  if (error instanceof ApiError)
    return (
      <p class="notice error" role="alert">
        {error.problem.status === 404 ? 'Not found' : `Error ${error.problem.status}`}: {error.message}
        {error.problem.code ? <> ({error.problem.code})</> : null}
      </p>
    );
  return (
    <p class="notice error" role="alert">
      Could not reach the control plane: {error instanceof Error ? error.message : String(error)}
    </p>
  );
}

/** Renders `children(value)` once loaded, a loading line before, the error after a failure. */
export function Show<T>({
  loaded,
  children,
}: {
  loaded: Loaded<T>;
  children: (value: T) => ComponentChildren;
}) {
  if (loaded.state === 'loading') return <p class="muted">Loading…</p>;
  if (loaded.state === 'error') return <ErrorNotice error={loaded.error} />;
  return <>{children(loaded.value)}</>;
}

export function Time({ at }: { at: string | null | undefined }) {
  if (!at) return <span class="muted">never</span>;
  const date = new Date(at);
  return (
    <time dateTime={at} title={date.toISOString()}>
      {date.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'medium' })}
    </time>
  );
}

const goodStates = new Set([
  'active',
  'completed',
  'succeeded',
  'stored',
  'delivered',
  'accepted',
  'connected',
]);
const badStates = new Set([
  'errored',
  'error',
  'failed',
  'rejected',
  'dead_lettered',
  'quarantined',
  'revoked',
  'disconnected',
  'missing_credentials',
  'critical',
  'unavailable',
  'misconfigured',
]);

export function Badge({ value }: { value: string | null | undefined }) {
  if (!value) return <span class="muted">—</span>;
  const tone = goodStates.has(value) ? 'good' : badStates.has(value) ? 'bad' : 'neutral';
  return <span class={`badge ${tone}`}>{value}</span>;
}

export function Json({ value, label }: { value: unknown; label: string }) {
  return (
    <pre class="json" tabIndex={0} aria-label={label}>
      {JSON.stringify(value, null, 2)}
    </pre>
  );
}

/** A button that copies `text`, saying so for a moment. */
export function CopyButton({ text, label }: { text: string; label: string }) {
  const [copied, setCopied] = useState(false);
  return (
    <button
      type="button"
      onClick={() => {
        void navigator.clipboard?.writeText(text).then(() => {
          setCopied(true);
          setTimeout(() => setCopied(false), 1500);
        });
      }}
    >
      {copied ? 'Copied' : label}
    </button>
  );
}

export function LastError({
  error,
}: {
  error: { message: string; code?: string; at?: string } | null | undefined;
}) {
  if (!error) return <span class="muted">none</span>;
  return (
    <span class="last-error">
      <strong>{error.code ?? 'error'}</strong>: {error.message}
      {error.at ? (
        <>
          {' '}
          <span class="muted">
            (<Time at={error.at} />)
          </span>
        </>
      ) : null}
    </span>
  );
}
