import { render } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import 'uplot/dist/uPlot.min.css';
import './console.css';
import { AccessProvider } from './access';
import { checkKey, forgetKey, onSignedOut, storedKey, storeKey } from './api';
import { AppPage, Apps, CreateApp, NewApp } from './pages/apps';
import { DeadLetters } from './pages/dead-letters';
import { IntegrationPage, Integrations } from './pages/integrations';
import { JobList, JobPage } from './pages/jobs';
import { SourcePage, Sources } from './pages/sources';
import { Overview } from './pages/overview';
import { Privacy } from './pages/privacy';
import { TaskPage, Tasks } from './pages/tasks';
import { isPlanTab, TrackingPlanPage, TrackingPlans } from './pages/tracking-plans';
import { Usage } from './pages/usage';
import { Warehouse } from './pages/warehouse';
import { WriteKeyPage, WriteKeys } from './pages/write-keys';

/** The page a hash names: #/, #/jobs/<id>, #/sources/<id>/jobs, #/write-keys/<id>, ... */
function route(hash: string) {
  const parts = hash.replace(/^#\/?/, '').split('/').filter(Boolean).map(decodeURIComponent);
  const [first, id, rest, ...more] = parts;
  if (first === 'apps' && id === 'new' && rest) return { nav: 'apps', page: <CreateApp appType={rest} /> };
  if (first === 'apps' && id === 'new') return { nav: 'apps', page: <NewApp /> };
  if (first === 'apps' && id) return { nav: 'apps', page: <AppPage id={id} /> };
  if (first === 'apps') return { nav: 'apps', page: <Apps /> };
  if (first === 'jobs' && id) return { nav: 'overview', page: <JobPage id={id} /> };
  if ((first === 'sources' || first === 'integrations') && id && rest === 'jobs')
    return { nav: 'overview', page: <JobList owner={first} id={id} /> };
  if (first === 'sources' && id) return { nav: 'sources', page: <SourcePage id={id} /> };
  if (first === 'sources') return { nav: 'sources', page: <Sources /> };
  if (first === 'integrations' && id) return { nav: 'integrations', page: <IntegrationPage id={id} /> };
  if (first === 'integrations') return { nav: 'integrations', page: <Integrations /> };
  if (first === 'write-keys' && id) return { nav: 'write-keys', page: <WriteKeyPage id={id} /> };
  if (first === 'write-keys') return { nav: 'write-keys', page: <WriteKeys /> };
  if (first === 'usage') return { nav: 'usage', page: <Usage /> };
  if (first === 'warehouse') return { nav: 'warehouse', page: <Warehouse /> };
  if (first === 'tasks' && id) return { nav: 'tasks', page: <TaskPage id={id} /> };
  if (first === 'tasks') return { nav: 'tasks', page: <Tasks /> };
  if (first === 'tracking-plans' && id)
    return {
      nav: 'tracking-plans',
      page: <TrackingPlanPage id={id} tab={isPlanTab(rest) ? rest : 'draft'} rest={more} />,
    };
  if (first === 'tracking-plans') return { nav: 'tracking-plans', page: <TrackingPlans /> };
  if (first === 'dead-letters') return { nav: 'dead-letters', page: <DeadLetters /> };
  if (first === 'privacy') return { nav: 'privacy', page: <Privacy /> };
  return { nav: 'overview', page: <Overview /> };
}

function useHash(): string {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const update = () => setHash(location.hash);
    window.addEventListener('hashchange', update);
    return () => window.removeEventListener('hashchange', update);
  }, []);
  return hash;
}

const NAV = [
  { id: 'overview', href: '#/', label: 'Overview' },
  { id: 'apps', href: '#/apps', label: 'Apps' },
  { id: 'sources', href: '#/sources', label: 'Sources' },
  { id: 'integrations', href: '#/integrations', label: 'Integrations' },
  { id: 'write-keys', href: '#/write-keys', label: 'Write keys' },
  { id: 'tracking-plans', href: '#/tracking-plans', label: 'Tracking plans' },
  { id: 'warehouse', href: '#/warehouse', label: 'Warehouse' },
  { id: 'usage', href: '#/usage', label: 'Usage' },
  { id: 'tasks', href: '#/tasks', label: 'Tasks' },
  { id: 'dead-letters', href: '#/dead-letters', label: 'Dead letters' },
  { id: 'privacy', href: '#/privacy', label: 'Privacy' },
];

function App() {
  const [signedIn, setSignedIn] = useState(storedKey() !== null);
  const [expired, setExpired] = useState(false);
  const hash = useHash();
  const main = useRef<HTMLElement>(null);
  useEffect(
    () =>
      onSignedOut(() => {
        setExpired(true);
        setSignedIn(false);
      }),
    [],
  );
  // Move focus to the new page so keyboard and screen reader users start at its top.
  useEffect(() => main.current?.focus({ preventScroll: true }), [hash]);
  if (!signedIn)
    return (
      <SignIn
        expired={expired}
        onSignedIn={() => {
          setExpired(false);
          setSignedIn(true);
        }}
      />
    );
  const { nav, page } = route(hash);
  return (
    <AccessProvider>
      <a class="skip" href="#main" onClick={(e) => (e.preventDefault(), main.current?.focus())}>
        Skip to the page
      </a>
      <header class="top">
        <span class="brand">Pipeline console</span>
        <nav aria-label="Pages">
          <ul>
            {NAV.map((n) => (
              <li key={n.id}>
                <a href={n.href} aria-current={n.id === nav ? 'page' : undefined}>
                  {n.label}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <button
          type="button"
          class="sign-out"
          onClick={() => {
            forgetKey();
            setSignedIn(false);
          }}
        >
          Sign out
        </button>
      </header>
      <main id="main" ref={main} tabIndex={-1} key={hash}>
        {page}
      </main>
    </AccessProvider>
  );
}

function SignIn({ expired, onSignedIn }: { expired: boolean; onSignedIn: () => void }) {
  const [key, setKey] = useState('');
  const [error, setError] = useState<string | null>(
    expired ? 'Your API key was not accepted any more: sign in again.' : null,
  );
  const [busy, setBusy] = useState(false);
  return (
    <main class="sign-in">
      <h1>Pipeline console</h1>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          const value = key.trim();
          if (!value) {
            setError('Enter an API key.');
            return;
          }
          setBusy(true);
          checkKey(value).then(
            (ok) => {
              setBusy(false);
              if (!ok) {
                setError('This API key was not accepted: it is unknown, revoked or mistyped.');
                return;
              }
              storeKey(value);
              onSignedIn();
            },
            (err: Error) => {
              setBusy(false);
              setError(`Could not reach the control plane: ${err.message}`);
            },
          );
        }}
      >
        <label for="api-key">API key</label>
        <input
          id="api-key"
          name="api-key"
          type="password"
          autoComplete="off"
          spellcheck={false}
          required
          value={key}
          onInput={(e) => setKey(e.currentTarget.value)}
          aria-describedby="api-key-help"
        />
        <p id="api-key-help" class="muted">
          A management API key (<code>cli api-keys create</code>). It is kept in this tab only
          (sessionStorage) and sent as <code>Authorization: Bearer</code> to this control plane&apos;s API.
        </p>
        {error ? (
          <p class="notice error" role="alert">
            {error}
          </p>
        ) : null}
        <button type="submit" class="primary" disabled={busy}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
    </main>
  );
}

const root = document.getElementById('app');
if (root) render(<App />, root);
