import { useState } from 'preact/hooks';
import { Allowed } from '../access';
import { call, client } from '../api';
import { attempt } from '../field-errors';
import { Badge, ErrorNotice, LastError, Show, Time, useLoad } from '../ui';

/**
 * Apps, sources and integrations of the account: state, status, last sync, last error, each
 * linked to its page (where it is fixed), and Sync now for a source in error when the key may.
 */
export function Overview() {
  return (
    <>
      <h1>Overview</h1>
      <Warehouse />
      <Sources />
      <Integrations />
      <Apps />
    </>
  );
}

/** Where the account's tracked data lands, and whether loading it works (GET /api/v1/warehouse). */
function Warehouse() {
  const [loaded] = useLoad(() => call('read the warehouse', client.GET('/api/v1/warehouse')), []);
  return (
    <section aria-labelledby="warehouse-heading">
      <h2 id="warehouse-heading">Warehouse</h2>
      <p>
        <a href="#/warehouse">Its size, and connecting your own server →</a>
      </p>
      <Show loaded={loaded}>
        {({ data }) => (
          <dl class="facts" data-warehouse-id={data.warehouseId}>
            <dt>Status</dt>
            <dd>
              <Badge value={data.status} />
              {data.statusDetail ? <span class="muted"> {data.statusDetail}</span> : null}
              {data.status !== 'active' ? (
                <p class="muted">
                  Events keep arriving and wait, none lost, until the warehouse takes them again.
                </p>
              ) : null}
            </dd>
            <dt>Server</dt>
            <dd>
              {data.owner === 'customer'
                ? 'your own PostgreSQL (an app of this account)'
                : "one of the service's servers"}
            </dd>
            <dt>Schema</dt>
            <dd>
              <code>{data.schema}</code>
            </dd>
            <dt>Since</dt>
            <dd>
              <Time at={data.statusChangedAt} />
            </dd>
          </dl>
        )}
      </Show>
    </section>
  );
}

function Sources() {
  const [loaded] = useLoad(
    () => call('read sources', client.GET('/api/v1/sources', { params: { query: { limit: 100 } } })),
    [],
  );
  return (
    <section aria-labelledby="sources-heading">
      <h2 id="sources-heading">Sources</h2>
      <Show loaded={loaded}>
        {({ data }) =>
          data.length === 0 ? (
            <p class="muted">No sources yet.</p>
          ) : (
            <table>
              <thead>
                <tr>
                  <th scope="col">App</th>
                  <th scope="col">Sync</th>
                  <th scope="col">State</th>
                  <th scope="col">Status</th>
                  <th scope="col">Last sync</th>
                  <th scope="col">Last error</th>
                  <th scope="col">Jobs</th>
                </tr>
              </thead>
              <tbody>
                {data.map((s) => (
                  <tr key={s.id} data-source-id={s.id}>
                    <td>
                      <a href={`#/sources/${s.id}`}>{s.appName}</a>
                    </td>
                    <td>
                      {s.syncType}, {s.syncFrequency}
                    </td>
                    <td>
                      <Badge value={s.state} />
                    </td>
                    <td>
                      <Badge value={s.integrationStatus} />
                      {s.consecutiveFailures > 0 ? (
                        <span class="muted"> ({s.consecutiveFailures} failures in a row)</span>
                      ) : null}
                    </td>
                    <td>
                      <Time at={s.lastSyncAt} />
                    </td>
                    <td>
                      <LastError error={s.lastError} />
                      {s.lastError || s.integrationStatus === 'failed' ? (
                        <p class="next-step">
                          Fix the cause on <a href={`#/sources/${s.id}`}>the source&apos;s page</a> or{' '}
                          <a href={`#/apps/${s.appId}`}>its app</a>, then sync it.{' '}
                          {s.state === 'active' ? (
                            <Allowed scope="sources.write">
                              <SyncNow sourceId={s.id} name={s.appName} />
                            </Allowed>
                          ) : null}
                        </p>
                      ) : null}
                    </td>
                    <td>
                      <a href={`#/sources/${s.id}/jobs`}>Jobs of {s.appName}</a>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )
        }
      </Show>
    </section>
  );
}

function Integrations() {
  const [loaded] = useLoad(
    () =>
      call('read integrations', client.GET('/api/v1/integrations', { params: { query: { limit: 100 } } })),
    [],
  );
  return (
    <section aria-labelledby="integrations-heading">
      <h2 id="integrations-heading">Integrations</h2>
      <Show loaded={loaded}>
        {({ data }) =>
          data.length === 0 ? (
            <p class="muted">No integrations yet.</p>
          ) : (
            <table>
              <thead>
                <tr>
                  <th scope="col">From → to</th>
                  <th scope="col">Data</th>
                  <th scope="col">State</th>
                  <th scope="col">Status</th>
                  <th scope="col">Last sync</th>
                  <th scope="col">Last error</th>
                  <th scope="col">Jobs</th>
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
                      {i.lastError ? (
                        <p class="next-step">
                          Fix the cause on <a href={`#/integrations/${i.id}`}>the integration&apos;s page</a>{' '}
                          or <a href={`#/apps/${i.destinationAppId}`}>its destination app</a>.
                        </p>
                      ) : null}
                    </td>
                    <td>
                      <a href={`#/integrations/${i.id}/jobs`}>Jobs</a>
                      {i.latestJobId ? (
                        <>
                          {' · '}
                          <a href={`#/jobs/${i.latestJobId}`}>latest job</a>
                        </>
                      ) : null}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )
        }
      </Show>
    </section>
  );
}

function Apps() {
  const [loaded] = useLoad(
    () => call('read apps', client.GET('/api/v1/apps', { params: { query: { limit: 100 } } })),
    [],
  );
  return (
    <section aria-labelledby="apps-heading">
      <h2 id="apps-heading">Apps</h2>
      <Show loaded={loaded}>
        {({ data }) =>
          data.length === 0 ? (
            <p class="muted">No apps yet.</p>
          ) : (
            <table>
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Type</th>
                  <th scope="col">Role</th>
                  <th scope="col">State</th>
                  <th scope="col">Last sync</th>
                  <th scope="col">Last error</th>
                </tr>
              </thead>
              <tbody>
                {data.map((a) => (
                  <tr key={a.id}>
                    <td>
                      <a href={`#/apps/${a.id}`}>{a.displayName}</a>
                    </td>
                    <td>{a.appType}</td>
                    <td>{a.role.join(', ')}</td>
                    <td>
                      <Badge value={a.state} />
                    </td>
                    <td>
                      <Time at={a.lastSyncAt} />
                    </td>
                    <td>{a.errorMessage ?? <span class="muted">none</span>}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )
        }
      </Show>
    </section>
  );
}

/** POST /api/v1/sources/{id}/sync from the overview: the queued job linked, or the API's error. */
export function SyncNow({ sourceId, name }: { sourceId: string; name: string }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const [jobId, setJobId] = useState<string | null>(null);
  if (jobId)
    return (
      <span role="status">
        Sync queued: <a href={`#/jobs/${jobId}`}>its job</a>.
      </span>
    );
  return (
    <>
      <button
        type="button"
        class="small"
        disabled={busy}
        aria-label={`Sync ${name} now`}
        onClick={() =>
          void attempt(setBusy, setError, async () => {
            const { data } = await call(
              'sync sources',
              client.POST('/api/v1/sources/{sourceId}/sync', { params: { path: { sourceId } } }),
            );
            setJobId(data.id);
          })
        }
      >
        Sync now
      </button>
      {error ? <ErrorNotice error={error} /> : null}
    </>
  );
}
