import { useMemo, useState } from 'preact/hooks';
import { call, client } from '../api';
import type { AppItem, AppType, SourceDetail } from '../types';
import { Badge, LastError, Show, Time, useLoad } from '../ui';
import { Allowed } from '../access';
import { attempt, errorAt, FieldError, fieldErrorsOf, FormError } from '../field-errors';
import { OwnerActions, OwnerJobs } from './jobs';

const readSources = () =>
  call('read sources', client.GET('/api/v1/sources', { params: { query: { limit: 100 } } }));
const readSourceApps = () =>
  call(
    'read apps',
    client.GET('/api/v1/apps', { params: { query: { limit: 100, role: 'source', state: 'active' } } }),
  );
const readAppTypes = () => call('read apps', client.GET('/api/v1/app-types'));

/** The account's sources, and a new source made from one of its source apps. */
export function Sources() {
  const [sources] = useLoad(readSources, []);
  return (
    <>
      <h1>Sources</h1>
      <Show loaded={sources}>
        {({ data }) =>
          data.length === 0 ? (
            <p class="muted">No sources yet: create one below from a source app.</p>
          ) : (
            <table>
              <thead>
                <tr>
                  <th scope="col">Source</th>
                  <th scope="col">Imports</th>
                  <th scope="col">Schedule</th>
                  <th scope="col">State</th>
                  <th scope="col">Status</th>
                  <th scope="col">Last sync</th>
                  <th scope="col">Last error</th>
                </tr>
              </thead>
              <tbody>
                {data.map((s) => (
                  <tr key={s.id} data-source-id={s.id}>
                    <td>
                      <a href={`#/sources/${s.id}`}>{s.appName}</a> <span class="muted">{s.syncType}</span>
                    </td>
                    <td>{s.importTasks.join(', ')}</td>
                    <td>
                      {s.syncFrequency} at {s.syncAnchorTime} {s.syncAnchorTimezone}
                    </td>
                    <td>
                      <Badge value={s.state} />
                    </td>
                    <td>
                      <Badge value={s.integrationStatus} />
                    </td>
                    <td>
                      <Time at={s.lastSyncAt} />
                    </td>
                    <td>
                      <LastError error={s.lastError} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )
        }
      </Show>
      <Allowed scope="sources.write">
        <NewSource />
      </Allowed>
    </>
  );
}

/** Every IANA time zone the browser knows, for the anchor's time zone field. */
function timeZones(): string[] {
  const intl = Intl as unknown as { supportedValuesOf?: (key: string) => string[] };
  return ['UTC', ...(intl.supportedValuesOf?.('timeZone') ?? [])];
}

const SHOWN = [
  'appId',
  'syncType',
  'importTasks',
  'syncFrequencyValue',
  'syncFrequencyUnit',
  'syncAnchorTime',
  'syncAnchorTimezone',
  'rollingPeriodHours',
  'historicalSyncStartDate',
];

/** POST /api/v1/sources from a source-role app: import tasks, schedule, window, backfill, run now. */
function NewSource() {
  const [apps] = useLoad(readSourceApps, []);
  const [types] = useLoad(readAppTypes, []);
  return (
    <section aria-labelledby="new-source-heading">
      <h2 id="new-source-heading">New source</h2>
      <Show loaded={apps}>
        {({ data: sourceApps }) => (
          <Show loaded={types}>
            {({ data: appTypes }) =>
              sourceApps.length === 0 ? (
                <p class="muted">No active source app yet: connect one (Stripe, Shopify, HubSpot…) first.</p>
              ) : (
                <SourceForm apps={sourceApps} appTypes={appTypes} />
              )
            }
          </Show>
        )}
      </Show>
    </section>
  );
}

function SourceForm({ apps, appTypes }: { apps: AppItem[]; appTypes: AppType[] }) {
  const [appId, setAppId] = useState(apps[0]?.id ?? '');
  const app = apps.find((a) => a.id === appId);
  const offered = appTypes.find((t) => t.appType === app?.appType)?.importTasks ?? [];
  const [unchecked, setUnchecked] = useState<Set<string>>(new Set());
  const [frequency, setFrequency] = useState('1');
  const [unit, setUnit] = useState<'hours' | 'days'>('days');
  const [anchor, setAnchor] = useState('00:00');
  const [zone, setZone] = useState('UTC');
  const [window, setWindow] = useState('168');
  const [start, setStart] = useState('');
  const [runNow, setRunNow] = useState(true);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const zones = useMemo(timeZones, []);
  const fields = fieldErrorsOf(error);
  const invalid = (path: string) => (errorAt(fields, path) ? true : undefined);
  return (
    <form
      class="stacked"
      aria-label="New source"
      onSubmit={(e) => {
        e.preventDefault();
        if (!app) return;
        void attempt(setBusy, setError, async () => {
          const { data } = await call(
            'create sources',
            client.POST('/api/v1/sources', {
              body: {
                appId: app.id,
                syncType: app.appType,
                importTasks: offered.map((t) => t.name).filter((n) => !unchecked.has(n)),
                syncFrequencyValue: Number(frequency),
                syncFrequencyUnit: unit,
                syncAnchorTime: anchor,
                syncAnchorTimezone: zone.trim(),
                rollingPeriodHours: Number(window),
                ...(start ? { historicalSyncStartDate: new Date(`${start}T00:00:00Z`).toISOString() } : {}),
                runNow,
              },
            }),
          );
          location.hash = `#/sources/${data.id}`;
        });
      }}
    >
      <div class="fields">
        <label>
          Source app
          <select
            name="appId"
            value={appId}
            aria-invalid={invalid('appId')}
            onChange={(e) => {
              setAppId(e.currentTarget.value);
              setUnchecked(new Set());
            }}
          >
            {apps.map((a) => (
              <option key={a.id} value={a.id}>
                {a.displayName} ({a.appType})
              </option>
            ))}
          </select>
          <FieldError errors={fields} path="appId" />
          <FieldError errors={fields} path="syncType" />
        </label>
      </div>
      <fieldset aria-invalid={invalid('importTasks')}>
        <legend>Import tasks</legend>
        {offered.length === 0 ? <p class="muted">This app type imports nothing.</p> : null}
        {offered.map((task) => (
          <label key={task.name} class="check">
            <input
              type="checkbox"
              name="importTasks"
              value={task.name}
              checked={!unchecked.has(task.name)}
              onChange={(e) => {
                const next = new Set(unchecked);
                if (e.currentTarget.checked) next.delete(task.name);
                else next.add(task.name);
                setUnchecked(next);
              }}
            />
            {task.name}{' '}
            <span class="muted">
              (key {task.primaryKey}, cursor {task.cursorField})
            </span>
          </label>
        ))}
        <FieldError errors={fields} path="importTasks" />
      </fieldset>
      <div class="fields">
        <label>
          Every
          <input
            type="number"
            name="syncFrequencyValue"
            min={1}
            value={frequency}
            aria-invalid={invalid('syncFrequencyValue')}
            onInput={(e) => setFrequency(e.currentTarget.value)}
          />
          <FieldError errors={fields} path="syncFrequencyValue" />
        </label>
        <label>
          Unit
          <select
            name="syncFrequencyUnit"
            value={unit}
            onChange={(e) => setUnit(e.currentTarget.value as 'hours' | 'days')}
          >
            <option value="hours">hours</option>
            <option value="days">days</option>
          </select>
          <FieldError errors={fields} path="syncFrequencyUnit" />
        </label>
        <label>
          Anchor time
          <input
            type="time"
            name="syncAnchorTime"
            value={anchor}
            aria-invalid={invalid('syncAnchorTime')}
            onInput={(e) => setAnchor(e.currentTarget.value)}
          />
          <FieldError errors={fields} path="syncAnchorTime" />
        </label>
        <label>
          Time zone (IANA)
          <input
            name="syncAnchorTimezone"
            list="time-zones"
            value={zone}
            autoComplete="off"
            aria-invalid={invalid('syncAnchorTimezone')}
            onInput={(e) => setZone(e.currentTarget.value)}
          />
          <datalist id="time-zones">
            {zones.map((z) => (
              <option key={z} value={z} />
            ))}
          </datalist>
          <FieldError errors={fields} path="syncAnchorTimezone" />
        </label>
      </div>
      <div class="fields">
        <label>
          Rolling window (hours)
          <input
            type="number"
            name="rollingPeriodHours"
            min={1}
            value={window}
            aria-invalid={invalid('rollingPeriodHours')}
            onInput={(e) => setWindow(e.currentTarget.value)}
          />
          <FieldError errors={fields} path="rollingPeriodHours" />
        </label>
        <label>
          Historical start (optional)
          <input
            type="date"
            name="historicalSyncStartDate"
            value={start}
            aria-invalid={invalid('historicalSyncStartDate')}
            onInput={(e) => setStart(e.currentTarget.value)}
          />
          <FieldError errors={fields} path="historicalSyncStartDate" />
        </label>
        <label class="check">
          <input
            type="checkbox"
            name="runNow"
            checked={runNow}
            onChange={(e) => setRunNow(e.currentTarget.checked)}
          />
          Run the first sync now
        </label>
      </div>
      <FormError error={error} shown={SHOWN} />
      <button type="submit" class="primary" disabled={busy || !app} title="Needs sources.write">
        {busy ? 'Creating…' : 'Create source'}
      </button>
    </form>
  );
}

/** One source: its settings, Sync now, Pause/Resume, editing its import tasks and config, its syncs. */
export function SourcePage({ id }: { id: string }) {
  const [loaded, reload] = useLoad(
    () =>
      call('read sources', client.GET('/api/v1/sources/{sourceId}', { params: { path: { sourceId: id } } })),
    [id],
  );
  const [version, setVersion] = useState(0);
  const changed = () => {
    reload();
    setVersion((v) => v + 1);
  };
  return (
    <>
      <p>
        <a href="#/sources">← Sources</a>
      </p>
      <Show loaded={loaded}>
        {({ data: source }) => (
          <>
            <h1>
              {source.appName} <span class="muted">source</span>
            </h1>
            <OwnerActions
              scope="sources.write"
              runLabel="Sync now"
              canRun={source.state === 'active'}
              isActive={source.isActive}
              canToggle={source.state !== 'deleted'}
              run={() =>
                call(
                  'sync sources',
                  client.POST('/api/v1/sources/{sourceId}/sync', { params: { path: { sourceId: id } } }),
                )
              }
              toggle={(isActive) =>
                call(
                  'update sources',
                  client.PATCH('/api/v1/sources/{sourceId}', {
                    params: { path: { sourceId: id } },
                    body: { isActive },
                  }),
                )
              }
              onDone={changed}
            />
            <dl class="facts" data-source-id={source.id}>
              <dt>App</dt>
              <dd>
                <a href={`#/apps/${source.app.id}`}>{source.app.displayName}</a>{' '}
                <span class="muted">({source.syncType})</span>
              </dd>
              <dt>State</dt>
              <dd>
                <Badge value={source.state} />
              </dd>
              <dt>Status</dt>
              <dd data-field="integrationStatus">
                <Badge value={source.integrationStatus} />
                {source.consecutiveFailures > 0 ? (
                  <span class="muted"> ({source.consecutiveFailures} failures in a row)</span>
                ) : null}
              </dd>
              <dt>Schedule</dt>
              <dd>
                {source.oneOff
                  ? 'one-off'
                  : `${source.syncFrequency} at ${source.syncAnchorTime} ${source.syncAnchorTimezone}`}
                , rolling window {source.rollingPeriodDays} days
              </dd>
              <dt>Historical start</dt>
              <dd>
                {source.historicalSyncStartDate ? (
                  <Time at={source.historicalSyncStartDate} />
                ) : (
                  <span class="muted">none: all the history the vendor keeps</span>
                )}
              </dd>
              <dt>Next sync</dt>
              <dd>
                <Time at={source.nextSyncAt} />
              </dd>
              <dt>Last sync</dt>
              <dd>
                <Time at={source.lastSyncAt} />
              </dd>
              <dt>Last error</dt>
              <dd>
                <LastError error={source.lastError} />
              </dd>
              <dt>Warehouse</dt>
              <dd>
                <code>{source.warehouse.schema}</code>{' '}
                {source.warehouse.tables.length > 0 ? (
                  <span class="muted">({source.warehouse.tables.join(', ')})</span>
                ) : null}
              </dd>
            </dl>
            <Allowed scope="sources.write">
              <EditSource source={source} onSaved={reload} />
            </Allowed>
            <OwnerJobs owner="sources" id={id} version={version} onChange={reload} />
          </>
        )}
      </Show>
    </>
  );
}

/** PATCH /api/v1/sources/{id}: the import tasks and the connector config (JSON). */
function EditSource({ source, onSaved }: { source: SourceDetail; onSaved: () => void }) {
  const [types] = useLoad(readAppTypes, []);
  const [tasks, setTasks] = useState(new Set(source.importTasks));
  const [config, setConfig] = useState(JSON.stringify(source.config, null, 2));
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const [saved, setSaved] = useState(false);
  const [configError, setConfigError] = useState<string | null>(null);
  const fields = fieldErrorsOf(error);
  return (
    <details class="edit">
      <summary>Edit import tasks and config</summary>
      <Show loaded={types}>
        {({ data }) => {
          const offered = data.find((t) => t.appType === source.syncType)?.importTasks ?? [];
          return (
            <form
              class="stacked"
              aria-label="Edit source"
              onSubmit={(e) => {
                e.preventDefault();
                let parsed: Record<string, unknown>;
                try {
                  parsed = JSON.parse(config || '{}') as Record<string, unknown>;
                  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
                    throw new Error('must be a JSON object');
                } catch (err) {
                  setConfigError(`Config: ${(err as Error).message}`);
                  return;
                }
                setConfigError(null);
                setSaved(false);
                void attempt(setBusy, setError, async () => {
                  await call(
                    'update sources',
                    client.PATCH('/api/v1/sources/{sourceId}', {
                      params: { path: { sourceId: source.id } },
                      body: {
                        importTasks: offered.map((t) => t.name).filter((n) => tasks.has(n)),
                        config: parsed,
                      },
                    }),
                  );
                  setSaved(true);
                  onSaved();
                });
              }}
            >
              <fieldset>
                <legend>Import tasks</legend>
                {offered.map((task) => (
                  <label key={task.name} class="check">
                    <input
                      type="checkbox"
                      checked={tasks.has(task.name)}
                      onChange={(e) => {
                        const next = new Set(tasks);
                        if (e.currentTarget.checked) next.add(task.name);
                        else next.delete(task.name);
                        setTasks(next);
                      }}
                    />
                    {task.name}
                  </label>
                ))}
                <FieldError errors={fields} path="importTasks" />
              </fieldset>
              <label>
                Config (JSON; masked values keep the stored ones)
                <textarea
                  name="config"
                  rows={5}
                  spellcheck={false}
                  value={config}
                  aria-invalid={configError || errorAt(fields, 'config') ? true : undefined}
                  onInput={(e) => setConfig(e.currentTarget.value)}
                />
                <FieldError errors={configError ? { config: configError } : fields} path="config" />
              </label>
              <FormError error={error} shown={['importTasks', 'config']} />
              {saved ? <p class="notice good">Saved.</p> : null}
              <button type="submit" disabled={busy} title="Needs sources.write">
                Save
              </button>
            </form>
          );
        }}
      </Show>
    </details>
  );
}
