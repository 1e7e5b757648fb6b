import { useEffect, useState } from 'preact/hooks';
import { call, client } from '../api';
import type { Job } from '../types';
import { Badge, ErrorNotice, Json, LastError, Show, Time, useLoad } from '../ui';
import { Allowed } from '../access';
import { attempt, FormError } from '../field-errors';

const active = (job: Job) => job.status === 'queued' || job.status === 'running';

/**
 * A source's or an integration's action bar: run it now (`Sync now`, `Run now`: a new job) and
 * pause or resume it, each under the owner's write scope; after either, `onDone` (reload the
 * owner) and the jobs below (`version` for OwnerJobs) are read again. The API's refusal shows
 * under the bar.
 */
export function OwnerActions({
  scope,
  runLabel,
  canRun,
  isActive,
  canToggle,
  run,
  toggle,
  onDone,
}: {
  scope: 'sources.write' | 'integrations.write';
  runLabel: string;
  canRun: boolean;
  isActive: boolean;
  canToggle: boolean;
  run: () => Promise<unknown>;
  toggle: (isActive: boolean) => Promise<unknown>;
  onDone: () => void;
}) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const act = (work: () => Promise<unknown>) =>
    attempt(setBusy, setError, async () => {
      await work();
      onDone();
    });
  return (
    <>
      <div class="actions">
        <Allowed scope={scope}>
          <button
            type="button"
            class="primary"
            disabled={busy || !canRun}
            title={`Needs ${scope}`}
            onClick={() => act(run)}
          >
            {runLabel}
          </button>
          <button
            type="button"
            disabled={busy || !canToggle}
            title={`Needs ${scope}`}
            onClick={() => act(() => toggle(!isActive))}
          >
            {isActive ? 'Pause' : 'Resume'}
          </button>
        </Allowed>
      </div>
      <FormError error={error} shown={[]} />
    </>
  );
}

/** The jobs of one owner, as the API lists them (newest first). */
function ownerJobs(owner: 'sources' | 'integrations', id: string) {
  return call(
    `read ${owner}`,
    owner === 'sources'
      ? client.GET('/api/v1/sources/{sourceId}/jobs', {
          params: { path: { sourceId: id }, query: { limit: 20 } },
        })
      : client.GET('/api/v1/integrations/{integrationId}/jobs', {
          params: { path: { integrationId: id }, query: { limit: 20 } },
        }),
  );
}

/**
 * A source's syncs or an integration's runs, newest first: status, rows read and written (rows
 * sent, for a run), each one's error, and Cancel for a queued or running one (the owner's write
 * scope). Read again every second while one is queued or running, and when `version` changes.
 */
export function OwnerJobs({
  owner,
  id,
  version,
  onChange,
}: {
  owner: 'sources' | 'integrations';
  id: string;
  /** Changed by the page after it queued a job, so the list shows it at once. */
  version: number;
  /** Told when a job ended or was cancelled here, so the page reads its owner again. */
  onChange: () => void;
}) {
  const [loaded, reload] = useLoad(() => ownerJobs(owner, id), [owner, id, version]);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState<string | null>(null);
  const running = loaded.state === 'done' && loaded.value.data.some(active);
  const [wasRunning, setWasRunning] = useState(false);
  useEffect(() => {
    if (!running) {
      if (wasRunning) onChange();
      setWasRunning(false);
      return;
    }
    setWasRunning(true);
    const timer = setTimeout(reload, 1000);
    return () => clearTimeout(timer);
  }, [loaded]);
  const scope = owner === 'sources' ? 'sources.write' : 'integrations.write';
  const written = owner === 'sources' ? 'Rows written' : 'Rows sent';
  return (
    <section aria-labelledby="jobs-heading">
      <h2 id="jobs-heading">
        {owner === 'sources' ? 'Syncs' : 'Runs'}{' '}
        {running ? (
          <span class="live" aria-live="polite">
            refreshing while one runs
          </span>
        ) : null}
      </h2>
      {error ? <ErrorNotice error={error} /> : null}
      <Show loaded={loaded}>
        {({ data }) =>
          data.length === 0 ? (
            <p class="muted">No {owner === 'sources' ? 'syncs' : 'runs'} yet.</p>
          ) : (
            <table class="jobs">
              <thead>
                <tr>
                  <th scope="col">Job</th>
                  <th scope="col">Status</th>
                  <th scope="col">Trigger</th>
                  <th scope="col">Rows read</th>
                  <th scope="col">{written}</th>
                  <th scope="col">Started</th>
                  <th scope="col">Finished</th>
                  <th scope="col">Error</th>
                  <th scope="col">
                    <span class="visually-hidden">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {data.map((job) => (
                  <tr key={job.id} data-job-id={job.id} data-status={job.status}>
                    <td>
                      <a href={`#/jobs/${job.id}`} class="mono">
                        {job.id.slice(0, 8)}
                      </a>
                    </td>
                    <td>
                      <Badge value={job.status} />
                      {job.attempts > 1 ? <span class="muted"> (attempt {job.attempts})</span> : null}
                    </td>
                    <td>{job.trigger}</td>
                    <td class="num" data-field="rowsRead">
                      {job.rowsRead}
                    </td>
                    <td class="num" data-field="rowsWritten">
                      {job.rowsWritten}
                    </td>
                    <td>
                      <Time at={job.startedAt} />
                    </td>
                    <td>
                      <Time at={job.finishedAt} />
                    </td>
                    <td>{job.error ? <LastError error={job.error} /> : <span class="muted">none</span>}</td>
                    <td>
                      {active(job) ? (
                        <Allowed scope={scope}>
                          <button
                            type="button"
                            class="small"
                            disabled={busy === job.id}
                            title={`Needs ${scope}`}
                            onClick={() => {
                              setBusy(job.id);
                              setError(null);
                              call(
                                `cancel ${owner === 'sources' ? 'syncs' : 'runs'}`,
                                client.POST('/api/v1/jobs/{jobId}/cancel', {
                                  params: { path: { jobId: job.id } },
                                }),
                              ).then(
                                () => {
                                  setBusy(null);
                                  reload();
                                  onChange();
                                },
                                (e: unknown) => {
                                  setBusy(null);
                                  setError(e);
                                  reload();
                                },
                              );
                            }}
                          >
                            Cancel
                          </button>
                        </Allowed>
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

/** The jobs of a source or an integration, newest first. */
export function JobList({ owner, id }: { owner: 'sources' | 'integrations'; id: string }) {
  const [loaded] = useLoad(
    () =>
      call(
        `read ${owner}`,
        owner === 'sources'
          ? client.GET('/api/v1/sources/{sourceId}/jobs', {
              params: { path: { sourceId: id }, query: { limit: 50 } },
            })
          : client.GET('/api/v1/integrations/{integrationId}/jobs', {
              params: { path: { integrationId: id }, query: { limit: 50 } },
            }),
      ),
    [owner, id],
  );
  return (
    <>
      <p>
        <a href="#/">← Overview</a>
      </p>
      <h1>Jobs of {owner === 'sources' ? 'source' : 'integration'}</h1>
      <p class="muted mono">{id}</p>
      <Show loaded={loaded}>
        {({ data }) =>
          data.length === 0 ? (
            <p class="muted">No jobs yet.</p>
          ) : (
            <table>
              <thead>
                <tr>
                  <th scope="col">Job</th>
                  <th scope="col">Kind</th>
                  <th scope="col">Status</th>
                  <th scope="col">Trigger</th>
                  <th scope="col">Attempts</th>
                  <th scope="col">Rows read / written</th>
                  <th scope="col">Created</th>
                </tr>
              </thead>
              <tbody>
                {data.map((job) => (
                  <tr key={job.id}>
                    <td>
                      <a href={`#/jobs/${job.id}`} class="mono">
                        {job.id.slice(0, 8)}
                      </a>
                    </td>
                    <td>{job.kind}</td>
                    <td>
                      <Badge value={job.status} />
                    </td>
                    <td>{job.trigger}</td>
                    <td>{job.attempts}</td>
                    <td>
                      {job.rowsRead} / {job.rowsWritten}
                    </td>
                    <td>
                      <Time at={job.createdAt} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )
        }
      </Show>
    </>
  );
}

/** One job: its attempts, rows and error (GET /api/v1/jobs/{id}). */
export function JobPage({ id }: { id: string }) {
  const [loaded, reload] = useLoad(
    () => call('read jobs', client.GET('/api/v1/jobs/{jobId}', { params: { path: { jobId: id } } })),
    [id],
  );
  const [error, setError] = useState<unknown>(null);
  return (
    <>
      <h1>Job</h1>
      <Show loaded={loaded}>
        {({ data: job }) => (
          <>
            <p>
              {job.sourceId ? <a href={`#/sources/${job.sourceId}`}>← Its source</a> : null}
              {job.integrationId ? (
                <a href={`#/integrations/${job.integrationId}`}>← Its integration</a>
              ) : null}
            </p>
            <dl class="facts">
              <dt>Id</dt>
              <dd class="mono">{job.id}</dd>
              <dt>Kind</dt>
              <dd>{job.kind}</dd>
              <dt>Status</dt>
              <dd>
                <Badge value={job.status} />
              </dd>
              <dt>Trigger</dt>
              <dd>{job.trigger}</dd>
              <dt>Attempts</dt>
              <dd>{job.attempts}</dd>
              <dt>Rows read</dt>
              <dd>{job.rowsRead}</dd>
              <dt>Rows written</dt>
              <dd>{job.rowsWritten}</dd>
              <dt>Created</dt>
              <dd>
                <Time at={job.createdAt} />
              </dd>
              <dt>Started</dt>
              <dd>
                <Time at={job.startedAt} />
              </dd>
              <dt>Finished</dt>
              <dd>
                <Time at={job.finishedAt} />
              </dd>
              {job.notBefore ? (
                <>
                  <dt>Next attempt not before</dt>
                  <dd>
                    <Time at={job.notBefore} />
                  </dd>
                </>
              ) : null}
            </dl>
            {active(job) ? (
              <Allowed scope={job.kind === 'integration_run' ? 'integrations.write' : 'sources.write'}>
                <button
                  type="button"
                  title={`Needs ${job.kind === 'integration_run' ? 'integrations.write' : 'sources.write'}`}
                  onClick={() => {
                    setError(null);
                    call(
                      'cancel jobs',
                      client.POST('/api/v1/jobs/{jobId}/cancel', { params: { path: { jobId: job.id } } }),
                    ).then(reload, (e: unknown) => {
                      setError(e);
                      reload();
                    });
                  }}
                >
                  Cancel
                </button>
              </Allowed>
            ) : null}
            {error ? <ErrorNotice error={error} /> : null}
            <h2>Error</h2>
            {job.error ? <Json value={job.error} label="The job's error" /> : <p class="muted">none</p>}
          </>
        )}
      </Show>
    </>
  );
}
