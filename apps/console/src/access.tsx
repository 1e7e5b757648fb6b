// What the signed-in API key may do: read once after sign-in from GET /api/v1/me (any valid
// key may call it), so a page offers only the actions the key's scopes allow. A read-only key
// sees no button that the API would answer 403.
//
//   const { can } = useAccess();
//   if (can('apps.write')) …
//   <Allowed scope="apps.write"><button …>Delete</button></Allowed>
//
// The API still checks every call: this only hides what would be refused.
import { createContext, type ComponentChildren } from 'preact';
import { useContext, useEffect, useMemo, useState } from 'preact/hooks';
import { call, client } from './api';
import type { components } from './generated/openapi';

export type Me = components['schemas']['Me'];

export interface Access {
  /** Whether the key carries `scope` (e.g. `write_keys.write`). False until /me has answered. */
  can(scope: string): boolean;
  /** The key's scopes; empty until /me has answered. */
  scopes: string[];
  /** The account's enabled features (e.g. `automations`); empty until /me has answered. */
  features: string[];
  /** Whether the account has `feature` enabled. */
  hasFeature(feature: string): boolean;
  /** /me's answer: the key's id, name and prefix and the account; null before it (or if it failed). */
  me: Me | null;
}

function accessOf(me: Me | null): Access {
  const scopes = me?.scopes ?? [];
  const features = me?.account.features ?? [];
  const granted = new Set(scopes);
  const enabled = new Set(features);
  return {
    can: (scope) => granted.has(scope),
    scopes,
    features,
    hasFeature: (feature) => enabled.has(feature),
    me,
  };
}

const AccessContext = createContext<Access>(accessOf(null));

/** The signed-in key's access, for the pages below the provider. */
export function useAccess(): Access {
  return useContext(AccessContext);
}

/** Renders `children` only when the key carries `scope`; `otherwise` (default nothing) if not. */
export function Allowed({
  scope,
  children,
  otherwise = null,
}: {
  scope: string;
  children: ComponentChildren;
  otherwise?: ComponentChildren;
}) {
  const { can } = useAccess();
  return <>{can(scope) ? children : otherwise}</>;
}

/**
 * Loads /me once (the console mounts it after sign-in) and provides it to the pages. Renders
 * the pages only once it is known, so no button appears and then disappears. If /me cannot be
 * read (another error than 401, which signs out), the pages still render and read, with every
 * action hidden, and a notice says why.
 */
export function AccessProvider({ children }: { children: ComponentChildren }) {
  const [state, setState] = useState<{ me: Me | null; error: string | null } | null>(null);
  useEffect(() => {
    let live = true;
    call('read this key', client.GET('/api/v1/me')).then(
      ({ data }) => live && setState({ me: data, error: null }),
      (error: unknown) =>
        live && setState({ me: null, error: error instanceof Error ? error.message : String(error) }),
    );
    return () => {
      live = false;
    };
  }, []);
  const access = useMemo(() => accessOf(state?.me ?? null), [state]);
  if (!state) return <p class="muted">Loading…</p>;
  return (
    <AccessContext.Provider value={access}>
      {state.error ? (
        <p class="notice error" role="alert">
          Could not read this API key&apos;s scopes ({state.error}): actions are hidden; pages still show what
          the key may read.
        </p>
      ) : null}
      {children}
    </AccessContext.Provider>
  );
}
