import { useState } from 'preact/hooks';
import { Allowed, useAccess } from '../access';
import { call, client } from '../api';
import { attempt, Field, fieldErrorsOf, focusFirstError, FormError, type FieldErrors } from '../field-errors';
import {
  collect,
  defaultsOf,
  initialValue,
  SchemaForm,
  type FormValue,
  type JsonSchema,
} from '../schema-form';
import type { components } from '../generated/openapi';
import { Badge, ErrorNotice, Show, Time, useLoad } from '../ui';

type AppType = components['schemas']['AppTypeView'];
type AccountWarehouse = components['schemas']['AccountWarehouse'];
type WarehouseApp = components['schemas']['AppListItem'];

/** The app types a customer's own warehouse is described by (docs/warehouses.md). */
const ENGINES = [
  { appType: 'postgres_warehouse', label: 'PostgreSQL' },
  { appType: 'clickhouse_warehouse', label: 'ClickHouse' },
] as const;

/**
 * The field a failed connection test points at: the API answers these codes with the whole
 * `body.config` as their path, so the page names the field the code is about.
 */
const FIELD_OF_CODE: Record<string, string> = {
  warehouse_login_failed: 'credentials.password',
  warehouse_database_missing: 'config.database',
  warehouse_connection_refused: 'config.host',
  egress_address_refused: 'config.host',
  warehouse_tls_failed: 'config.tlsMode',
  warehouse_permission_denied: 'config.user',
  app_name_taken: 'displayName',
};

/**
 * The account's warehouse: where its data is (GET /api/v1/warehouse), how big it is (the usage
 * summary's storage, as last metered), its own servers (warehouse apps, each with a connection
 * test) and the form that connects one.
 */
export function Warehouse() {
  const [placed, reloadPlaced] = useLoad(
    () => call('read the warehouse', client.GET('/api/v1/warehouse')),
    [],
  );
  const [apps, reloadApps] = useLoad(
    () =>
      call('read apps', client.GET('/api/v1/apps', { params: { query: { role: 'warehouse', limit: 100 } } })),
    [],
  );
  return (
    <>
      <h1>Warehouse</h1>
      <section aria-labelledby="placed-heading">
        <h2 id="placed-heading">Where your data is</h2>
        <Show loaded={placed}>{({ data }) => <Placement warehouse={data} />}</Show>
      </section>
      <section aria-labelledby="own-heading">
        <h2 id="own-heading">Your own warehouse</h2>
        <p class="muted">
          Your events, users, groups and imported streams can be loaded into your own PostgreSQL or ClickHouse
          server instead. Connect it here: it is saved only once it answers the connection test. Your data
          then moves to it online (copied, verified, cut over, nothing paused) when the operator runs the
          move.
        </p>
        <Show loaded={apps}>
          {({ data }) => (
            <OwnWarehouses
              apps={data}
              placedOn={placed.state === 'done' ? placed.value.data : null}
              onTested={reloadPlaced}
            />
          )}
        </Show>
        <Allowed scope="apps.write">
          <Connect
            onConnected={() => {
              reloadApps();
              reloadPlaced();
            }}
          />
        </Allowed>
      </section>
    </>
  );
}

function Placement({ warehouse }: { warehouse: AccountWarehouse }) {
  const { can } = useAccess();
  return (
    <dl class="facts" data-warehouse-id={warehouse.warehouseId}>
      <dt>Server</dt>
      <dd>
        {warehouse.owner === 'customer'
          ? 'your own server (an app of this account)'
          : "one of the service's servers (the platform warehouse)"}
      </dd>
      <dt>Engine</dt>
      <dd>{warehouse.engine === 'clickhouse' ? 'ClickHouse' : 'PostgreSQL'}</dd>
      <dt>Schema</dt>
      <dd>
        <code>{warehouse.schema}</code>
      </dd>
      <dt>Status</dt>
      <dd>
        <Badge value={warehouse.status} />
        {warehouse.statusDetail ? <span class="muted"> {warehouse.statusDetail}</span> : null}
        <span class="muted">
          {' '}
          since <Time at={warehouse.statusChangedAt} />
        </span>
        {warehouse.status !== 'active' ? (
          <p class="muted">Events keep arriving and wait, none lost, until the warehouse takes them again.</p>
        ) : null}
      </dd>
      <dt>Size</dt>
      <dd>{can('usage.read') ? <Size /> : <span class="muted">needs the scope usage.read</span>}</dd>
    </dl>
  );
}

/**
 * The schema's size as the usage metering last measured it: the API has no live size for an
 * account (the operator's warehouse list has the server's), so this is the usage summary's
 * storage on the latest metered day.
 */
function Size() {
  const [loaded] = useLoad(
    () => call('read usage', client.GET('/api/v1/usage/summary', { params: { query: { days: '1' } } })),
    [],
  );
  return (
    <Show loaded={loaded}>
      {({ data }) =>
        data.meteredAt ? (
          <span data-storage-gb={data.storage.gb}>
            {formatGb(data.storage.gb)}{' '}
            <span class="muted">
              (as the usage metering measured it, <Time at={data.meteredAt} />)
            </span>
          </span>
        ) : (
          <span class="muted">not measured yet (the usage metering runs every 15 minutes)</span>
        )
      }
    </Show>
  );
}

function formatGb(gb: number): string {
  if (gb >= 1) return `${gb.toLocaleString(undefined, { maximumFractionDigits: 2 })} GB`;
  const mb = gb * 1000;
  return `${mb.toLocaleString(undefined, { maximumFractionDigits: mb < 1 ? 3 : 1 })} MB`;
}

function OwnWarehouses({
  apps,
  placedOn,
  onTested,
}: {
  apps: WarehouseApp[];
  placedOn: AccountWarehouse | null;
  onTested: () => void;
}) {
  const { me } = useAccess();
  if (apps.length === 0) return <p class="muted">No server of your own is connected.</p>;
  const waiting = apps.filter((a) => a.state === 'active' && placedOn?.appId !== a.id);
  return (
    <>
      <table>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Engine</th>
            <th scope="col">State</th>
            <th scope="col">Holds your data</th>
            <Allowed scope="apps.write">
              <th scope="col">Connection</th>
            </Allowed>
          </tr>
        </thead>
        <tbody>
          {apps.map((a) => (
            <tr key={a.id}>
              <td>{a.displayName}</td>
              <td>{ENGINES.find((e) => e.appType === a.appType)?.label ?? a.appType}</td>
              <td>
                <Badge value={a.state} />
              </td>
              <td>{placedOn?.appId === a.id ? <strong>yes</strong> : <span class="muted">not yet</span>}</td>
              <Allowed scope="apps.write">
                <td>
                  <TestConnection app={a} onTested={onTested} />
                </td>
              </Allowed>
            </tr>
          ))}
        </tbody>
      </table>
      {waiting.length > 0 ? (
        <div class="notice" aria-label="Next step">
          <p>
            <strong>Next step: the move.</strong> Your data stays where it is until the account is moved onto
            your server. The move runs online; ask your operator to start it:
          </p>
          {waiting.map((a) => (
            <pre class="snippet" key={a.id} tabIndex={0} aria-label={`The move to ${a.displayName}`}>
              cli warehouses move {me?.account.id ?? '<account id>'} --to app-{a.id}
            </pre>
          ))}
        </div>
      ) : null}
    </>
  );
}

function TestConnection({ app, onTested }: { app: WarehouseApp; onTested: () => void }) {
  const [result, setResult] = useState<{ ok: true; schemaCreated: boolean } | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  if (app.state !== 'active') return <span class="muted">no password set</span>;
  return (
    <div>
      <button
        type="button"
        class="small"
        disabled={busy}
        aria-label={`Test the connection of ${app.displayName}`}
        onClick={() => {
          setBusy(true);
          setResult(null);
          setError(null);
          call(
            'test connections',
            client.POST('/api/v1/apps/{appId}/test-connection', { params: { path: { appId: app.id } } }),
          ).then(
            ({ data }) => {
              setBusy(false);
              setResult(data);
              onTested();
            },
            (e: unknown) => {
              setBusy(false);
              setError(e);
            },
          );
        }}
      >
        {busy ? 'Testing…' : 'Test connection'}
      </button>
      {result ? (
        <p class="notice good" role="status">
          The server answered: the pipeline can log in and create its tables
          {result.schemaCreated ? ' (the schema was created)' : ''}.
        </p>
      ) : null}
      {error ? <ErrorNotice error={error} /> : null}
    </div>
  );
}

/**
 * Connects a server of the account's own: the app type's schemas as a SchemaForm (read from
 * GET /api/v1/app-types/{type}), saved with POST /api/v1/apps, which tests the connection first
 * and saves nothing when it fails; the failure is shown at the field it is about.
 */
function Connect({ onConnected }: { onConnected: () => void }) {
  const [appType, setAppType] = useState<string>(ENGINES[0].appType);
  const [loaded] = useLoad(
    () =>
      call('read app types', client.GET('/api/v1/app-types/{appType}', { params: { path: { appType } } })),
    [appType],
  );
  return (
    <section aria-labelledby="connect-heading">
      <h3 id="connect-heading">Connect your own server</h3>
      <div class="field">
        <label for="warehouse-engine">Engine</label>
        <select id="warehouse-engine" value={appType} onChange={(e) => setAppType(e.currentTarget.value)}>
          {ENGINES.map((e) => (
            <option key={e.appType} value={e.appType}>
              {e.label}
            </option>
          ))}
        </select>
      </div>
      <Show loaded={loaded}>
        {({ data }) => <ConnectForm key={data.appType} type={data} onConnected={onConnected} />}
      </Show>
    </section>
  );
}

function ConnectForm({ type, onConnected }: { type: AppType; onConnected: () => void }) {
  const configSchema = type.configSchema as JsonSchema;
  const credentialsSchema = type.credentialsSchema as JsonSchema;
  const [displayName, setDisplayName] = useState('');
  // A new server starts from the type's defaults (port 5432, TLS verify-full), shown filled in.
  const [config, setConfig] = useState<FormValue>(() => initialValue(configSchema, defaultsOf(configSchema)));
  const [credentials, setCredentials] = useState<FormValue>(() => initialValue(credentialsSchema, undefined));
  const [error, setError] = useState<unknown>(null);
  const [checked, setChecked] = useState<FieldErrors>({});
  const [busy, setBusy] = useState(false);
  const [saved, setSaved] = useState<string | null>(null);
  const fields = { ...fieldErrorsOf(error, FIELD_OF_CODE), ...checked };

  return (
    <form
      class="form"
      noValidate
      aria-label={`Connect your own ${type.name}`}
      onSubmit={(e) => {
        e.preventDefault();
        const found: FieldErrors = displayName.trim() ? {} : { displayName: 'Required.' };
        const conf = collect(configSchema, config, 'config', found);
        const creds = collect(credentialsSchema, credentials, 'credentials', found);
        setChecked(found);
        setSaved(null);
        setError(null);
        if (Object.keys(found).length > 0) {
          focusFirstError(found);
          return;
        }
        void attempt(setBusy, setError, async () => {
          const { data } = await call(
            'connect warehouses',
            client.POST('/api/v1/apps', {
              body: {
                appType: type.appType,
                displayName: displayName.trim(),
                config: conf.value as Record<string, unknown>,
                credentials: creds.value as Record<string, unknown>,
              },
            }),
          );
          setSaved(data.displayName);
          setCredentials(initialValue(credentialsSchema, undefined));
          onConnected();
        });
      }}
    >
      <p class="muted">{type.description}</p>
      <Field path="displayName" label="Name" errors={fields}>
        {(props) => (
          <input
            {...props}
            name="displayName"
            required
            maxLength={200}
            value={displayName}
            onInput={(e) => setDisplayName(e.currentTarget.value)}
          />
        )}
      </Field>
      <SchemaForm
        path="config"
        legend="Server"
        schema={configSchema}
        value={config}
        onChange={setConfig}
        errors={fields}
      />
      <SchemaForm
        path="credentials"
        legend="Login"
        schema={credentialsSchema}
        value={credentials}
        onChange={setCredentials}
        errors={fields}
        hint="Sent once to test the connection and stored encrypted; never shown again."
      />
      <FormError error={error} errors={fields} />
      {saved ? (
        <p class="notice good" role="status">
          Connected “{saved}”: the server answered the connection test. Your data moves to it when the
          operator runs the move (above).
        </p>
      ) : null}
      <button type="submit" class="primary" disabled={busy}>
        {busy ? 'Testing the connection…' : 'Test connection and save'}
      </button>
    </form>
  );
}
