// Apps: the account's connections to platforms, created from the catalog's app types with a form
// generated from each type's JSON Schemas (schema-form.tsx). Secrets are write-only: an app's
// stored credentials show as "set" and are replaced only when typed again.

import { useState } from 'preact/hooks';
import { Allowed } from '../access';
import { call, client } from '../api';
import {
  Field,
  FieldError,
  fieldErrorsOf,
  focusFirstError,
  FormError,
  type FieldErrors,
} from '../field-errors';
import {
  collect,
  initialValue,
  isEntered,
  SchemaForm,
  type FormValue,
  type JsonSchema,
} from '../schema-form';
import type { AppDetail, AppType } from '../types';
import { Badge, Show, Time, useLoad } from '../ui';

const ROLE_HEADINGS = { source: 'Sources', destination: 'Destinations', warehouse: 'Warehouses' } as const;

const loadTypes = () => call('read the app types', client.GET('/api/v1/app-types'));

/** Whether POST /apps/{id}/test-connection works for the type: warehouses and importing sources. */
export const canTestConnection = (type: AppType) =>
  type.importTasks.length > 0 || type.roles.includes('warehouse');

export function Apps() {
  const [loaded] = useLoad(
    () =>
      Promise.all([
        call('read apps', client.GET('/api/v1/apps', { params: { query: { limit: 100 } } })),
        loadTypes(),
      ]),
    [],
  );
  return (
    <>
      <div class="heading-row">
        <h1>Apps</h1>
        <Allowed scope="apps.write">
          <a class="button primary" href="#/apps/new">
            Add app
          </a>
        </Allowed>
      </div>
      <Show loaded={loaded}>
        {([{ data }, types]) => {
          const names = new Map(types.data.map((t) => [t.appType, t.name]));
          return data.length === 0 ? (
            <p class="muted">No apps yet: add one from the catalog.</p>
          ) : (
            <table>
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Type</th>
                  <th scope="col">Roles</th>
                  <th scope="col">State</th>
                  <th scope="col">Last error</th>
                  <th scope="col">Updated</th>
                </tr>
              </thead>
              <tbody>
                {data.map((app) => (
                  <tr key={app.id}>
                    <td>
                      <a href={`#/apps/${app.id}`}>{app.displayName}</a>
                    </td>
                    <td>{names.get(app.appType) ?? app.appType}</td>
                    <td>{app.role.join(', ')}</td>
                    <td>
                      <Badge value={app.state} />
                    </td>
                    <td>{app.errorMessage ?? <span class="muted">none</span>}</td>
                    <td>
                      <Time at={app.updatedAt} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          );
        }}
      </Show>
    </>
  );
}

/** The catalog grouped by role; a type may appear under two roles. */
export function NewApp() {
  const [loaded] = useLoad(loadTypes, []);
  return (
    <>
      <p>
        <a href="#/apps">← Apps</a>
      </p>
      <h1>Add an app</h1>
      <Show loaded={loaded}>
        {({ data }) =>
          (['source', 'destination', 'warehouse'] as const).map((role) => {
            const types = data.filter((t) => t.roles.includes(role));
            if (types.length === 0) return null;
            return (
              <section key={role} aria-labelledby={`role-${role}`}>
                <h2 id={`role-${role}`}>{ROLE_HEADINGS[role]}</h2>
                <ul class="catalog">
                  {types.map((t) => (
                    <li key={t.appType}>
                      <a href={`#/apps/new/${t.appType}`}>{t.name}</a>
                      <p class="muted">{t.description}</p>
                    </li>
                  ))}
                </ul>
              </section>
            );
          })
        }
      </Show>
    </>
  );
}

/** The form of a new app of `appType`. */
export function CreateApp({ appType }: { appType: string }) {
  const [loaded] = useLoad(
    () =>
      call('read the app type', client.GET('/api/v1/app-types/{appType}', { params: { path: { appType } } })),
    [appType],
  );
  return (
    <>
      <p>
        <a href="#/apps/new">← Add an app</a>
      </p>
      <Show loaded={loaded}>{({ data }) => <AppForm type={data} />}</Show>
    </>
  );
}

/** One app: its state, its form (edit), test connection, disable and delete. */
export function AppPage({ id }: { id: string }) {
  const [loaded, reload] = useLoad(async () => {
    const { data } = await call(
      'read the app',
      client.GET('/api/v1/apps/{appId}', { params: { path: { appId: id } } }),
    );
    const type = await call(
      'read the app type',
      client.GET('/api/v1/app-types/{appType}', { params: { path: { appType: data.appType } } }),
    );
    return { app: data, type: type.data };
  }, [id]);
  return (
    <>
      <p>
        <a href="#/apps">← Apps</a>
      </p>
      <Show loaded={loaded}>{({ app, type }) => <AppForm type={type} app={app} onChanged={reload} />}</Show>
    </>
  );
}

type Outcome = { kind: 'ok'; message: string } | { kind: 'error'; error: unknown } | null;

/** What the app page says first after a new app was saved and the page moved to it. */
let flash: string | null = null;

function AppForm({ type, app, onChanged }: { type: AppType; app?: AppDetail; onChanged?: () => void }) {
  const credentialsSchema = type.credentialsSchema as JsonSchema;
  const configSchema = type.configSchema as JsonSchema;
  const [name, setName] = useState(app?.displayName ?? '');
  const [credentials, setCredentials] = useState<FormValue>(() => initialValue(credentialsSchema, undefined));
  const [config, setConfig] = useState<FormValue>(() => initialValue(configSchema, app?.config));
  const [errors, setErrors] = useState<FieldErrors>({});
  const [outcome, setOutcome] = useState<Outcome>(() => {
    const message = app ? flash : null;
    flash = null;
    return message ? { kind: 'ok', message } : null;
  });
  const [roles, setRoles] = useState<string[]>(app?.role ?? type.roles);
  const [busy, setBusy] = useState<string | null>(null);
  const [confirming, setConfirming] = useState<'delete' | 'disable' | null>(null);
  const stored = app?.credentials ? Object.keys(app.credentials) : [];
  const deleted = app?.state === 'deleted';

  const run = async (what: string, work: () => Promise<string>) => {
    setBusy(what);
    setOutcome(null);
    try {
      setOutcome({ kind: 'ok', message: await work() });
      setErrors({});
    } catch (error) {
      const found = fieldErrorsOf(error);
      setErrors(found);
      setOutcome({ kind: 'error', error });
      setTimeout(() => focusFirstError(found), 0);
    } finally {
      setBusy(null);
    }
  };

  const submit = (event: Event) => {
    event.preventDefault();
    const found: FieldErrors = {};
    if (!name.trim()) found.displayName = 'Required.';
    if (roles.length === 0) found.role = 'Choose at least one.';
    // Editing: credentials are replaced as a whole, so they are sent only when some were typed,
    // and then every required one must be typed again.
    const typed = isEntered(credentials);
    const sendCredentials = !app || typed;
    const creds = collect(credentialsSchema, credentials, 'credentials', sendCredentials ? found : {});
    const conf = collect(configSchema, config, 'config', found);
    if (Object.keys(found).length > 0) {
      setErrors(found);
      setOutcome({
        kind: 'error',
        error: new Error(`${Object.keys(found).length} field(s) to correct: see below.`),
      });
      focusFirstError(found);
      return;
    }
    const credentialsValue = creds.value as Record<string, unknown>;
    const hasCredentials = Object.keys(credentialsValue).length > 0;
    void run('save', async () => {
      if (!app) {
        const { data } = await call(
          'create apps',
          client.POST('/api/v1/apps', {
            body: {
              appType: type.appType,
              displayName: name.trim(),
              role: roles as AppDetail['role'],
              ...(hasCredentials ? { credentials: credentialsValue } : {}),
              config: conf.value as Record<string, unknown>,
            },
          }),
        );
        flash = 'Saved.';
        location.hash = `#/apps/${data.id}`;
        return 'Saved.';
      }
      await call(
        'change apps',
        client.PATCH('/api/v1/apps/{appId}', {
          params: { path: { appId: app.id } },
          body: {
            displayName: name.trim(),
            role: roles as AppDetail['role'],
            config: conf.value as Record<string, unknown>,
            ...(typed && hasCredentials ? { credentials: credentialsValue } : {}),
          },
        }),
      );
      // The typed secrets leave the page once stored.
      setCredentials(initialValue(credentialsSchema, undefined));
      onChanged?.();
      return 'Saved.';
    });
  };

  const heading = app ? app.displayName : `Add ${type.name}`;
  return (
    <>
      <h1>{heading}</h1>
      <p class="muted">{type.description}</p>
      {app ? (
        <dl class="facts">
          <dt>Type</dt>
          <dd>{type.name}</dd>
          <dt>State</dt>
          <dd>
            <Badge value={app.state} />
            {app.state === 'inactive' ? (
              <span class="muted"> (no credentials: type them to enable)</span>
            ) : null}
          </dd>
          <dt>Roles</dt>
          <dd>{app.role.join(', ')}</dd>
          <dt>Last error</dt>
          <dd>{app.errorMessage ?? <span class="muted">none</span>}</dd>
          <dt>Updated</dt>
          <dd>
            <Time at={app.updatedAt} />
          </dd>
        </dl>
      ) : null}
      {app?.credentialsError ? (
        <p class="notice error" role="alert">
          {app.credentialsError.message}. Type them again below to replace them.
        </p>
      ) : null}
      <div aria-live="polite" class="outcome">
        {outcome?.kind === 'ok' ? (
          <p class="notice good" role="status">
            {outcome.message}
          </p>
        ) : null}
        {outcome?.kind === 'error' ? <FormError error={outcome.error} errors={errors} /> : null}
      </div>
      {deleted ? (
        <p class="notice">This app is deleted.</p>
      ) : (
        <form
          class="app-form"
          noValidate
          onSubmit={submit}
          aria-label={app ? 'Edit the app' : `New ${type.name} app`}
        >
          <Field path="displayName" label="Name" errors={errors}>
            {(props) => (
              <input
                {...props}
                value={name}
                autoComplete="off"
                onInput={(e) => setName(e.currentTarget.value)}
                aria-required="true"
              />
            )}
          </Field>
          {type.roles.length > 1 ? (
            <fieldset id="f-role" aria-describedby={errors.role ? 'f-role-error' : undefined}>
              <legend>Roles</legend>
              {type.roles.map((role) => (
                <label class="inline" key={role}>
                  <input
                    type="checkbox"
                    checked={roles.includes(role)}
                    onChange={(e) =>
                      setRoles(
                        e.currentTarget.checked
                          ? type.roles.filter((r) => r === role || roles.includes(r))
                          : roles.filter((r) => r !== role),
                      )
                    }
                  />{' '}
                  {role}
                </label>
              ))}
              <FieldError errors={errors} path="role" />
            </fieldset>
          ) : null}
          <SchemaForm
            path="credentials"
            legend="Credentials"
            schema={credentialsSchema}
            value={credentials}
            onChange={setCredentials}
            errors={errors}
            setSecrets={stored}
            hint={
              app && stored.length > 0
                ? 'Stored credentials are never shown. Leave these empty to keep them; to change any, type all of them again (they are replaced together).'
                : 'Secrets are sent once and never shown again.'
            }
          />
          <SchemaForm
            path="config"
            legend="Settings"
            schema={configSchema}
            value={config}
            onChange={setConfig}
            errors={errors}
          />
          <div class="actions">
            <Allowed scope="apps.write">
              <button type="submit" class="primary" disabled={busy !== null}>
                {busy === 'save' ? 'Saving…' : app ? 'Save changes' : 'Save app'}
              </button>
            </Allowed>
          </div>
        </form>
      )}
      {app && !deleted ? (
        <div class="actions app-actions">
          {canTestConnection(type) ? (
            <Allowed scope="apps.write">
              <button
                type="button"
                disabled={busy !== null}
                onClick={() =>
                  void run('test', async () => {
                    await call(
                      'test connections of apps',
                      client.POST('/api/v1/apps/{appId}/test-connection', {
                        params: { path: { appId: app.id } },
                      }),
                    );
                    return 'Connection test passed.';
                  })
                }
              >
                {busy === 'test' ? 'Testing…' : 'Test connection'}
              </button>
            </Allowed>
          ) : null}
          {app.state === 'active' && stored.length > 0 ? (
            <Allowed scope="apps.write">
              <button type="button" disabled={busy !== null} onClick={() => setConfirming('disable')}>
                Disable
              </button>
            </Allowed>
          ) : null}
          <Allowed scope="apps.write">
            <button
              type="button"
              class="danger"
              disabled={busy !== null}
              onClick={() => setConfirming('delete')}
            >
              Delete
            </button>
          </Allowed>
        </div>
      ) : null}
      {app && confirming ? (
        <div class="confirm" role="alertdialog" aria-labelledby="confirm-text">
          <p id="confirm-text">
            {confirming === 'delete'
              ? `Delete ${app.displayName}? Sources and integrations can no longer use it.`
              : `Disable ${app.displayName}? Its stored credentials are removed (the app becomes inactive) until they are typed again.`}
          </p>
          <button
            type="button"
            class="danger"
            ref={(el) => el?.focus()}
            onClick={() => {
              const what = confirming;
              setConfirming(null);
              void run(what, async () => {
                if (what === 'delete') {
                  await call(
                    'delete apps',
                    client.DELETE('/api/v1/apps/{appId}', { params: { path: { appId: app.id } } }),
                  );
                  location.hash = '#/apps';
                  return 'Deleted.';
                }
                await call(
                  'change apps',
                  client.PATCH('/api/v1/apps/{appId}', {
                    params: { path: { appId: app.id } },
                    body: { credentials: null },
                  }),
                );
                onChanged?.();
                return 'Disabled.';
              });
            }}
          >
            {confirming === 'delete' ? 'Delete app' : 'Disable app'}
          </button>{' '}
          <button type="button" onClick={() => setConfirming(null)}>
            Cancel
          </button>
        </div>
      ) : null}
    </>
  );
}
