import { useEffect, useState } from 'preact/hooks';
import { Allowed } from '../access';
import { call, client, mcpTool } from '../api';
import type { List, PrecheckResult, Task, TaskRun, Template } from '../types';
import { attempt } from '../field-errors';
import { SyncNow } from './overview';
import { Badge, ErrorNotice, Json, Show, Time, useLoad } from '../ui';

/**
 * Tasks: the templates (MCP templates_list), each template's precheck, starting a task made from
 * it (POST /api/v1/tasks, then .../start), and the account's tasks (MCP tasks_list).
 */
export function Tasks() {
  const [templates] = useLoad(() => mcpTool<{ data: Template[] }>('templates_list'), []);
  const [tasks, reloadTasks] = useLoad(() => mcpTool<List<Task>>('tasks_list', { limit: 20 }), []);
  return (
    <>
      <h1>Tasks</h1>
      <section aria-labelledby="templates-heading">
        <h2 id="templates-heading">Templates</h2>
        <Show loaded={templates}>
          {({ data }) => (
            <ul class="cards">
              {data.map((t) => (
                <TemplateCard key={t.template_id} template={t} onStarted={reloadTasks} />
              ))}
            </ul>
          )}
        </Show>
      </section>
      <section aria-labelledby="tasks-heading">
        <h2 id="tasks-heading">Tasks of this account</h2>
        <Show loaded={tasks}>
          {({ data }) =>
            data.length === 0 ? (
              <p class="muted">No tasks yet: start one from a template.</p>
            ) : (
              <table>
                <thead>
                  <tr>
                    <th scope="col">Task</th>
                    <th scope="col">Template</th>
                    <th scope="col">Latest run</th>
                    <th scope="col">Created</th>
                  </tr>
                </thead>
                <tbody>
                  {data.map((t) => (
                    <tr key={t.task_id}>
                      <td>
                        <a href={`#/tasks/${t.task_id}`}>{t.title}</a>
                      </td>
                      <td>{t.template_id}</td>
                      <td>
                        <Badge value={t.latest_run?.status ?? 'never_run'} />
                      </td>
                      <td>
                        <Time at={t.created_at} />
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )
          }
        </Show>
      </section>
    </>
  );
}

function TemplateCard({ template, onStarted }: { template: Template; onStarted: () => void }) {
  const [precheck, setPrecheck] = useState<PrecheckResult | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const run = (work: () => Promise<void>) => attempt(setBusy, setError, work);
  return (
    <li class="card">
      <h3>{template.name}</h3>
      <p class="muted mono">
        {template.template_id} v{template.version}
      </p>
      <p>{template.description}</p>
      <div class="actions">
        <Allowed scope="tasks.read">
          <button
            type="button"
            disabled={busy}
            onClick={() =>
              run(async () => {
                const { data } = await call(
                  'check tasks',
                  client.POST('/api/v1/templates/{templateId}/precheck', {
                    params: { path: { templateId: template.template_id } },
                  }),
                );
                setPrecheck(data);
              })
            }
          >
            Check prerequisites
          </button>
        </Allowed>
        {/* Creating needs tasks.write, starting it tasks.manage. */}
        <Allowed scope="tasks.write">
          <Allowed scope="tasks.manage">
            <button
              type="button"
              class="primary"
              disabled={busy}
              onClick={() =>
                run(async () => {
                  const created = await call(
                    'create tasks',
                    client.POST('/api/v1/tasks', { body: { template_id: template.template_id } }),
                  );
                  await call(
                    'start tasks',
                    client.POST('/api/v1/tasks/{taskId}/start', {
                      params: { path: { taskId: created.data.task_id } },
                      body: {},
                    }),
                  );
                  onStarted();
                  location.hash = `#/tasks/${created.data.task_id}`;
                })
              }
            >
              Start a task
            </button>
          </Allowed>
        </Allowed>
      </div>
      {precheck ? (
        precheck.ready ? (
          <p class="notice good">Ready: nothing is missing.</p>
        ) : (
          <ul class="gaps" aria-label="What is missing">
            {precheck.gaps.map((g, i) => (
              <li key={i}>
                <Badge value={g.kind} /> {g.hint}
              </li>
            ))}
          </ul>
        )
      ) : null}
      {error ? <ErrorNotice error={error} /> : null}
    </li>
  );
}

/** One task: its runs, the latest one's progress and report; start again or cancel. */
export function TaskPage({ id }: { id: string }) {
  const [loaded, reload] = useLoad(
    () => mcpTool<Task & { runs: TaskRun[] }>('tasks_get', { task_id: id }),
    [id],
  );
  const [error, setError] = useState<unknown>(null);
  const active =
    loaded.state === 'done' && ['pending', 'running'].includes(loaded.value.latest_run?.status ?? '');
  useEffect(() => {
    if (!active) return;
    const timer = setInterval(reload, 1000);
    return () => clearInterval(timer);
  }, [active, reload]);
  const act = (answer: () => Promise<unknown>) => {
    setError(null);
    answer().then(reload, setError);
  };
  const path = { params: { path: { taskId: id } } };
  return (
    <>
      <p>
        <a href="#/tasks">← Tasks</a>
      </p>
      <Show loaded={loaded}>
        {(task) => (
          <>
            <h1>{task.title}</h1>
            <dl class="facts">
              <dt>Template</dt>
              <dd>{task.template_id}</dd>
              <dt>Params</dt>
              <dd class="mono">{JSON.stringify(task.params)}</dd>
              <dt>Latest run</dt>
              <dd>
                <Badge value={task.latest_run?.status ?? 'never_run'} />
              </dd>
            </dl>
            <Allowed scope="tasks.manage">
              <div class="actions">
                <button
                  type="button"
                  class="primary"
                  disabled={active}
                  onClick={() =>
                    act(() =>
                      call('start tasks', client.POST('/api/v1/tasks/{taskId}/start', { ...path, body: {} })),
                    )
                  }
                >
                  Start a run
                </button>
                <button
                  type="button"
                  disabled={!active}
                  onClick={() =>
                    act(() => call('cancel tasks', client.POST('/api/v1/tasks/{taskId}/cancel', path)))
                  }
                >
                  Cancel the run
                </button>
              </div>
            </Allowed>
            {error ? <ErrorNotice error={error} /> : null}
            {task.runs.map((run, i) => (
              <section key={run.task_run_id} class="run" aria-label={`Run ${task.runs.length - i}`}>
                <h2>
                  Run {task.runs.length - i} <Badge value={run.status} />
                </h2>
                <p class="muted">
                  started <Time at={run.started_at} />, finished <Time at={run.finished_at} />
                </p>
                {run.error ? <Json value={run.error} label="The run's error" /> : null}
                {run.result ? (
                  <>
                    <h3>Report</h3>
                    <Report report={run.result} />
                  </>
                ) : null}
                {run.progress && !run.result ? <Steps progress={run.progress} /> : null}
              </section>
            ))}
          </>
        )}
      </Show>
    </>
  );
}

interface Progress {
  steps?: { id: string; name: string; status: string; startedAt: string | null; finishedAt: string | null }[];
}

function Steps({ progress }: { progress: unknown }) {
  const steps = (progress as Progress).steps ?? [];
  return (
    <ol class="steps" aria-label="Steps">
      {steps.map((step) => (
        <li key={step.id}>
          {step.name} <Badge value={step.status} />
        </li>
      ))}
    </ol>
  );
}

interface Finding {
  severity: string;
  code: string;
  resource?: { type?: string; id?: string; name?: string };
  message: string;
  recommendation?: string;
}

/** The console's page for a finding's resource (an app, a source, an integration), if any. */
function pageOf(resource: Finding['resource']): string | null {
  if (!resource?.id) return null;
  const pages: Record<string, string> = { app: 'apps', source: 'sources', integration: 'integrations' };
  const page = resource.type ? pages[resource.type] : undefined;
  return page ? `#/${page}/${encodeURIComponent(resource.id)}` : null;
}

/**
 * What to do, said as the console does it: a recommendation naming an API call (`POST
 * /api/v1/sources/…/sync`) is replaced by the step on the resource's page.
 */
const STEPS: Record<string, string> = {
  sync_error: 'Fix the cause (its last error is on its page), then sync it.',
  stale_sync: 'Sync or run it now, and check on its page that its schedule runs.',
  paused: 'Resume it on its page, or delete it.',
  app_missing: 'Delete it on its page, or connect a new app for it.',
  missing_credentials: 'Type its credentials on the app’s page.',
  not_connected: 'Type its credentials on the app’s page.',
};

function stepOf(f: Finding): string | undefined {
  if (!f.recommendation || !/\/api\/v1\//.test(f.recommendation)) return f.recommendation;
  return STEPS[f.code] ?? 'Open it to fix it.';
}

function NextStep({ finding }: { finding: Finding }) {
  const href = pageOf(finding.resource);
  const step = stepOf(finding);
  const sourceId = finding.resource?.type === 'source' ? finding.resource.id : undefined;
  return (
    <div class="muted next-step">
      {step} {href ? <a href={href}>Open {finding.resource?.name ?? finding.resource?.type}</a> : null}
      {sourceId && (finding.code === 'sync_error' || finding.code === 'stale_sync') ? (
        <>
          {' '}
          <Allowed scope="sources.write">
            <SyncNow sourceId={sourceId} name={finding.resource?.name ?? 'the source'} />
          </Allowed>
        </>
      ) : null}
    </div>
  );
}

function Report({ report }: { report: unknown }) {
  const r = report as { summary?: Record<string, number>; findings?: Finding[] };
  return (
    <>
      {r.summary ? (
        <p>
          {Object.entries(r.summary)
            .map(([k, v]) => `${v} ${k}`)
            .join(', ')}
        </p>
      ) : null}
      {r.findings && r.findings.length > 0 ? (
        <ul class="findings">
          {r.findings.map((f, i) => (
            <li key={i} class={`finding ${f.severity}`}>
              <Badge value={f.severity} /> <code>{f.code}</code> {f.message}
              {f.recommendation || pageOf(f.resource) ? <NextStep finding={f} /> : null}
            </li>
          ))}
        </ul>
      ) : null}
      <details>
        <summary>The whole report (JSON)</summary>
        <Json value={report} label="The run's report" />
      </details>
    </>
  );
}
