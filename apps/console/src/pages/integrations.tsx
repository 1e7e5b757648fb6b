import { useState } from 'preact/hooks';
import { call, client } from '../api';
import type { AppItem, AppType } from '../types';
import { Badge, Json, LastError, Show, Time, useLoad } from '../ui';
import { Allowed } from '../access';
import { attempt, errorAt, FieldError, fieldErrorsOf, FormError } from '../field-errors';
import { OwnerActions, OwnerJobs } from './jobs';

const readApps = () =>
  call('read apps', client.GET('/api/v1/apps', { params: { query: { limit: 100, state: 'active' } } }));
const readAppTypes = () => call('read apps', client.GET('/api/v1/app-types'));

/** The account's integrations, and a new one from a source app (or tracked data) to a destination app. */
export function Integrations() {
  const [loaded] = useLoad(
    () =>
      call('read integrations', client.GET('/api/v1/integrations', { params: { query: { limit: 100 } } })),
    [],
  );
  return (
    <>
      <h1>Integrations</h1>
      <Show loaded={loaded}>
        {({ data }) =>
          data.length === 0 ? (
            <p class="muted">No integrations yet: create one below.</p>
          ) : (
            <table>
              <thead>
                <tr>
                  <th scope="col">From → to</th>
                  <th scope="col">Data</th>
                  <th scope="col">Tasks</th>
                  <th scope="col">State</th>
                  <th scope="col">Status</th>
                  <th scope="col">Last run</th>
                  <th scope="col">Last error</th>
                </tr>
              </thead>
              <tbody>
                {data.map((i) => (
                  <tr key={i.id} data-integration-id={i.id}>
                    <td>
                      <a href={`#/integrations/${i.id}`}>
                        {i.sourceAppName ?? 'tracked data'} → {i.destinationAppName}
                      </a>
                    </td>
                    <td>{i.dataType}</td>
                    <td>{i.config.tasks.map((t) => t.task_type).join(', ')}</td>
                    <td>
                      <Badge value={i.state} />
                    </td>
                    <td>
                      <Badge value={i.status} />
                    </td>
                    <td>
                      <Time at={i.lastSyncAt} />
                    </td>
                    <td>
                      <LastError error={i.lastError} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )
        }
      </Show>
      <Allowed scope="integrations.write">
        <NewIntegration />
      </Allowed>
    </>
  );
}

function NewIntegration() {
  const [apps] = useLoad(readApps, []);
  const [types] = useLoad(readAppTypes, []);
  return (
    <section aria-labelledby="new-integration-heading">
      <h2 id="new-integration-heading">New integration</h2>
      <Show loaded={apps}>
        {({ data: all }) => (
          <Show loaded={types}>
            {({ data: appTypes }) =>
              all.some((a) => a.role.includes('destination')) ? (
                <IntegrationForm apps={all} appTypes={appTypes} />
              ) : (
                <p class="muted">No active destination app yet: connect one (Amplitude, Braze…) first.</p>
              )
            }
          </Show>
        )}
      </Show>
    </section>
  );
}

/** The task types of `config.tasks` (docs/delivery-and-destinations.md, "Integration runs"). */
const TASKS = [
  { type: 'source_stream', label: 'Source stream: the rows a source of the source app imported' },
  { type: 'user_attributes', label: 'User attributes: identified users with their traits' },
  { type: 'recent_events', label: 'Recent events: track and page events of the rolling window' },
  { type: 'events', label: 'Events: tracked events forwarded as they arrive' },
] as const;
type TaskType = (typeof TASKS)[number]['type'];

const list = (text: string) =>
  text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);

/** A global config value as typed: JSON when it parses (numbers, true, lists), else the text. */
function valueOf(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

const SHOWN = [
  'sourceAppId',
  'destinationAppId',
  'dataType',
  'config.tasks',
  'config.global',
  'schedule.frequencyValue',
  'schedule.frequencyUnit',
  'schedule.rollingWindowDays',
];

function IntegrationForm({ apps, appTypes }: { apps: AppItem[]; appTypes: AppType[] }) {
  const sources = apps.filter((a) => a.role.includes('source'));
  const destinations = apps.filter((a) => a.role.includes('destination'));
  const [sourceAppId, setSourceAppId] = useState(sources[0]?.id ?? '');
  const [destinationAppId, setDestinationAppId] = useState(destinations[0]?.id ?? '');
  const source = sources.find((a) => a.id === sourceAppId);
  const streams = appTypes.find((t) => t.appType === source?.appType)?.importTasks ?? [];
  const [dataType, setDataType] = useState('users');
  const [chosen, setChosen] = useState<Set<TaskType>>(
    new Set([sources.length ? 'source_stream' : 'user_attributes']),
  );
  const [stream, setStream] = useState('');
  const [userIdField, setUserIdField] = useState('');
  const [fields, setFields] = useState('');
  const [events, setEvents] = useState('');
  const [global, setGlobal] = useState<{ key: string; value: string }[]>([]);
  const [frequency, setFrequency] = useState('1');
  const [unit, setUnit] = useState<'hours' | 'days'>('days');
  const [windowDays, setWindowDays] = useState('7');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const errors = fieldErrorsOf(error);
  const invalid = (path: string) => (errorAt(errors, path) ? true : undefined);
  const taskOf = (type: TaskType): Record<string, unknown> & { task_type: string } => {
    switch (type) {
      case 'source_stream':
        return {
          task_type: type,
          stream: stream || streams[0]?.name || '',
          ...(userIdField.trim() ? { userIdField: userIdField.trim() } : {}),
        };
      case 'user_attributes':
        return { task_type: type, ...(list(fields).length ? { fields: list(fields) } : {}) };
      case 'recent_events':
        return { task_type: type, ...(list(events).length ? { events: list(events) } : {}) };
      default:
        return { task_type: type };
    }
  };
  const tasks = TASKS.filter((t) => chosen.has(t.type)).map((t) => t.type);
  return (
    <form
      class="stacked"
      aria-label="New integration"
      onSubmit={(e) => {
        e.preventDefault();
        void attempt(setBusy, setError, async () => {
          const { data } = await call(
            'create integrations',
            client.POST('/api/v1/integrations', {
              body: {
                ...(sourceAppId ? { sourceAppId } : {}),
                destinationAppId,
                dataType: dataType.trim(),
                config: {
                  global: Object.fromEntries(
                    global.filter((g) => g.key.trim()).map((g) => [g.key.trim(), valueOf(g.value)]),
                  ),
                  tasks: tasks.map(taskOf),
                },
                schedule: {
                  frequencyValue: Number(frequency),
                  frequencyUnit: unit,
                  rollingWindowDays: Number(windowDays),
                },
              },
            }),
          );
          location.hash = `#/integrations/${data.id}`;
        });
      }}
    >
      <div class="fields">
        <label>
          Source app
          <select
            name="sourceAppId"
            value={sourceAppId}
            aria-invalid={invalid('sourceAppId')}
            onChange={(e) => {
              setSourceAppId(e.currentTarget.value);
              setStream('');
            }}
          >
            <option value="">none: tracked data</option>
            {sources.map((a) => (
              <option key={a.id} value={a.id}>
                {a.displayName} ({a.appType})
              </option>
            ))}
          </select>
          <FieldError errors={errors} path="sourceAppId" />
        </label>
        <span aria-hidden="true" class="arrow">
          →
        </span>
        <label>
          Destination app
          <select
            name="destinationAppId"
            value={destinationAppId}
            aria-invalid={invalid('destinationAppId')}
            onChange={(e) => setDestinationAppId(e.currentTarget.value)}
          >
            {destinations.map((a) => (
              <option key={a.id} value={a.id}>
                {a.displayName} ({a.appType})
              </option>
            ))}
          </select>
          <FieldError errors={errors} path="destinationAppId" />
        </label>
        <label>
          Data type
          <input
            name="dataType"
            value={dataType}
            aria-invalid={invalid('dataType')}
            onInput={(e) => setDataType(e.currentTarget.value)}
          />
          <FieldError errors={errors} path="dataType" />
        </label>
      </div>
      <fieldset aria-invalid={invalid('config.tasks')}>
        <legend>Tasks</legend>
        {TASKS.map((t) => (
          <div key={t.type} class="task">
            <label class="check">
              <input
                type="checkbox"
                name="task_type"
                value={t.type}
                checked={chosen.has(t.type)}
                onChange={(e) => {
                  const next = new Set(chosen);
                  if (e.currentTarget.checked) next.add(t.type);
                  else next.delete(t.type);
                  setChosen(next);
                }}
              />
              <code>{t.type}</code> <span class="muted">{t.label}</span>
            </label>
            {chosen.has(t.type) && t.type === 'source_stream' ? (
              <div class="fields indent">
                <label>
                  Stream
                  <select
                    name="stream"
                    value={stream || streams[0]?.name || ''}
                    onChange={(e) => setStream(e.currentTarget.value)}
                  >
                    {streams.map((s) => (
                      <option key={s.name} value={s.name}>
                        {s.name}
                      </option>
                    ))}
                  </select>
                </label>
                <label>
                  User id field (default id)
                  <input
                    name="userIdField"
                    value={userIdField}
                    onInput={(e) => setUserIdField(e.currentTarget.value)}
                  />
                </label>
              </div>
            ) : null}
            {chosen.has(t.type) && t.type === 'user_attributes' ? (
              <div class="fields indent">
                <label>
                  Traits (comma-separated; empty: all)
                  <input name="fields" value={fields} onInput={(e) => setFields(e.currentTarget.value)} />
                </label>
              </div>
            ) : null}
            {chosen.has(t.type) && t.type === 'recent_events' ? (
              <div class="fields indent">
                <label>
                  Events (comma-separated; empty: all)
                  <input name="events" value={events} onInput={(e) => setEvents(e.currentTarget.value)} />
                </label>
              </div>
            ) : null}
            {tasks.includes(t.type) ? (
              <FieldError errors={errors} path={`config.tasks.${tasks.indexOf(t.type)}`} />
            ) : null}
          </div>
        ))}
        <FieldError errors={errors} path="config.tasks" exact />
      </fieldset>
      <fieldset>
        <legend>Global config</legend>
        {global.map((g, i) => (
          <div class="fields" key={i}>
            <label>
              Key
              <input
                value={g.key}
                onInput={(e) => {
                  const key = e.currentTarget.value;
                  setGlobal(global.map((x, j) => (j === i ? { ...x, key } : x)));
                }}
              />
            </label>
            <label>
              Value (JSON or text)
              <input
                value={g.value}
                onInput={(e) => {
                  const value = e.currentTarget.value;
                  setGlobal(global.map((x, j) => (j === i ? { ...x, value } : x)));
                }}
              />
            </label>
            <button type="button" class="small" onClick={() => setGlobal(global.filter((_, j) => j !== i))}>
              Remove
            </button>
          </div>
        ))}
        <button type="button" class="small" onClick={() => setGlobal([...global, { key: '', value: '' }])}>
          Add a setting
        </button>
        <FieldError errors={errors} path="config.global" />
      </fieldset>
      <div class="fields">
        <label>
          Every
          <input
            type="number"
            name="frequencyValue"
            min={1}
            value={frequency}
            aria-invalid={invalid('schedule.frequencyValue')}
            onInput={(e) => setFrequency(e.currentTarget.value)}
          />
          <FieldError errors={errors} path="schedule.frequencyValue" />
        </label>
        <label>
          Unit
          <select
            name="frequencyUnit"
            value={unit}
            onChange={(e) => setUnit(e.currentTarget.value as 'hours' | 'days')}
          >
            <option value="hours">hours</option>
            <option value="days">days</option>
          </select>
        </label>
        <label>
          Rolling window (days)
          <input
            type="number"
            name="rollingWindowDays"
            min={1}
            value={windowDays}
            aria-invalid={invalid('schedule.rollingWindowDays')}
            onInput={(e) => setWindowDays(e.currentTarget.value)}
          />
          <FieldError errors={errors} path="schedule.rollingWindowDays" />
        </label>
      </div>
      <FormError error={error} shown={SHOWN} />
      <button
        type="submit"
        class="primary"
        disabled={busy || !destinationAppId}
        title="Needs integrations.write"
      >
        {busy ? 'Creating…' : 'Create integration'}
      </button>
    </form>
  );
}

/** One integration: what it sends where, Run now, Pause/Resume, and its runs with rows sent and errors. */
export function IntegrationPage({ id }: { id: string }) {
  const [loaded, reload] = useLoad(
    () =>
      call(
        'read integrations',
        client.GET('/api/v1/integrations/{integrationId}', { params: { path: { integrationId: id } } }),
      ),
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
        <a href="#/integrations">← Integrations</a>
      </p>
      <Show loaded={loaded}>
        {({ data: i }) => (
          <>
            <h1>
              {i.sourceAppName ?? 'Tracked data'} → {i.destinationAppName}
            </h1>
            <OwnerActions
              scope="integrations.write"
              runLabel="Run now"
              canRun={i.state === 'active'}
              isActive={i.isActive}
              canToggle={i.state !== 'deleted'}
              run={() =>
                call(
                  'run integrations',
                  client.POST('/api/v1/integrations/{integrationId}/run', {
                    params: { path: { integrationId: id } },
                  }),
                )
              }
              toggle={(isActive) =>
                call(
                  'update integrations',
                  client.PATCH('/api/v1/integrations/{integrationId}', {
                    params: { path: { integrationId: id } },
                    body: { isActive },
                  }),
                )
              }
              onDone={changed}
            />
            <dl class="facts" data-integration-id={i.id}>
              <dt>From</dt>
              <dd>
                {i.sourceApp ? (
                  <>
                    <a href={`#/apps/${i.sourceApp.id}`}>{i.sourceApp.displayName}</a> ({i.sourceApp.appType})
                  </>
                ) : (
                  'tracked data'
                )}
              </dd>
              <dt>To</dt>
              <dd>
                <a href={`#/apps/${i.destinationApp.id}`}>{i.destinationApp.displayName}</a> (
                {i.destinationApp.appType})
              </dd>
              <dt>Data type</dt>
              <dd>{i.dataType}</dd>
              <dt>Status</dt>
              <dd data-field="status">
                <Badge value={i.status} />
                {i.consecutiveFailures > 0 ? (
                  <span class="muted"> ({i.consecutiveFailures} failures in a row)</span>
                ) : null}
              </dd>
              <dt>Source data</dt>
              <dd>
                <Badge value={i.importDependencyStatus} />
              </dd>
              <dt>Schedule</dt>
              <dd>
                every {i.schedule.frequencyValue} {i.schedule.frequencyUnit}, rolling window{' '}
                {i.schedule.rollingWindowDays} days
              </dd>
              <dt>Next run</dt>
              <dd>
                <Time at={i.nextRunAt} />
              </dd>
              <dt>Last run</dt>
              <dd>
                <Time at={i.lastSyncAt} />
              </dd>
              <dt>Last error</dt>
              <dd>
                <LastError error={i.lastError} />
              </dd>
            </dl>
            <details>
              <summary>Config</summary>
              <Json value={i.config} label="The integration's config" />
            </details>
            <OwnerJobs owner="integrations" id={id} version={version} onChange={reload} />
          </>
        )}
      </Show>
    </>
  );
}
