import { call, client } from '../api';
import { Badge, Json, Show, Time, useLoad } from '../ui';

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
  const [loaded] = useLoad(
    () => call('read jobs', client.GET('/api/v1/jobs/{jobId}', { params: { path: { jobId: id } } })),
    [id],
  );
  return (
    <>
      <h1>Job</h1>
      <Show loaded={loaded}>
        {({ data: job }) => (
          <>
            <p>
              {job.sourceId ? <a href={`#/sources/${job.sourceId}/jobs`}>← Jobs of its source</a> : null}
              {job.integrationId ? (
                <a href={`#/integrations/${job.integrationId}/jobs`}>← Jobs of its integration</a>
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
            <h2>Error</h2>
            {job.error ? <Json value={job.error} label="The job's error" /> : <p class="muted">none</p>}
          </>
        )}
      </Show>
    </>
  );
}
