import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { Allowed, useAccess } from '../access';
import { ApiError, call, client } from '../api';
import { attempt, Field, fieldErrorsOf, FormError } from '../field-errors';
import type { components } from '../generated/openapi';
import { exportFileName, parseDraft, problemsOf, type PlanProblem } from '../tracking-plans';
import { ErrorNotice, Json, Show, Time, useLoad } from '../ui';
import { QuarantineTab } from './plan-quarantine';
import { ViolationsTab } from './plan-violations';

type Plan = components['schemas']['TrackingPlanView'];
type Change = components['schemas']['PlanChangeView'];

/**
 * The tabs of a plan's page, addressed as #/tracking-plans/<id>/<tab>. Violations join this list
 * once their API exists; each tab is one component given the plan.
 */
export const PLAN_TABS = [
  { id: 'draft', label: 'Draft' },
  { id: 'versions', label: 'Versions' },
  { id: 'diff', label: 'Diff' },
  { id: 'violations', label: 'Violations' },
  { id: 'quarantine', label: 'Quarantine' },
] as const;
export type PlanTab = (typeof PLAN_TABS)[number]['id'];

export function isPlanTab(value: string | undefined): value is PlanTab {
  return PLAN_TABS.some((t) => t.id === value);
}

const planPath = (planId: string) => ({ params: { path: { planId } } });

export function TrackingPlans() {
  const [loaded] = useLoad(
    () =>
      call(
        'read tracking plans',
        client.GET('/api/v1/tracking-plans', { params: { query: { limit: 100 } } }),
      ),
    [],
  );
  return (
    <>
      <h1>Tracking plans</h1>
      <p class="muted">
        Which events a write key&apos;s sources send and what each holds. Edit a plan&apos;s draft, publish it
        as an immutable version, then bind a write key to it on the key&apos;s page.
      </p>
      <Show loaded={loaded}>
        {({ data, pagination }) =>
          data.length === 0 ? (
            <p class="muted">No tracking plans yet.</p>
          ) : (
            <>
              {pagination.total > data.length ? (
                <p class="muted">
                  The {data.length} newest of {pagination.total}.
                </p>
              ) : null}
              <table>
                <thead>
                  <tr>
                    <th scope="col">Name</th>
                    <th scope="col">Description</th>
                    <th scope="col">Latest version</th>
                    <th scope="col">Draft</th>
                    <th scope="col">Write keys</th>
                    <th scope="col">Updated</th>
                  </tr>
                </thead>
                <tbody>
                  {data.map((p) => (
                    <tr key={p.id}>
                      <td>
                        <a href={`#/tracking-plans/${p.id}`}>{p.name}</a>
                      </td>
                      <td>{p.description || <span class="muted">—</span>}</td>
                      <td>{p.latestVersion ?? <span class="muted">none</span>}</td>
                      <td>{p.draftChanged ? <span class="badge warn">changed</span> : 'published'}</td>
                      <td>{p.boundWriteKeys}</td>
                      <td>
                        <Time at={p.updatedAt} />
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </>
          )
        }
      </Show>
      <Allowed scope="tracking_plans.write">
        <CreatePlan />
        <ImportPlan />
      </Allowed>
    </>
  );
}

function CreatePlan() {
  const [name, setName] = useState('');
  const [description, setDescription] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const fields = fieldErrorsOf(error);
  return (
    <section aria-labelledby="create-plan-heading">
      <h2 id="create-plan-heading">New tracking plan</h2>
      <form
        class="form"
        noValidate
        onSubmit={(e) => {
          e.preventDefault();
          void attempt(setBusy, setError, async () => {
            const { data } = await call(
              'create tracking plans',
              client.POST('/api/v1/tracking-plans', { body: { name, description } }),
            );
            location.hash = `#/tracking-plans/${data.id}/draft`;
          });
        }}
      >
        <Field path="name" label="Name" errors={fields}>
          {(props) => (
            <input {...props} name="name" value={name} onInput={(e) => setName(e.currentTarget.value)} />
          )}
        </Field>
        <Field path="description" label="Description" errors={fields}>
          {(props) => (
            <input
              {...props}
              name="description"
              value={description}
              onInput={(e) => setDescription(e.currentTarget.value)}
            />
          )}
        </Field>
        <FormError error={error} errors={fields} shown={['name', 'description']} />
        <button type="submit" class="primary" disabled={busy}>
          {busy ? 'Creating…' : 'Create the plan'}
        </button>
      </form>
    </section>
  );
}

/** A pasted Segment or Rudder CLI plan, made a new plan's draft (nothing published). */
function ImportPlan() {
  const [format, setFormat] = useState<'segment' | 'rudderstack'>('segment');
  const [name, setName] = useState('');
  const [content, setContent] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const problems = problemsOf(error);
  const fields = fieldErrorsOf(error);
  return (
    <section aria-labelledby="import-plan-heading">
      <h2 id="import-plan-heading">Import a tracking plan</h2>
      <form
        class="form import-form"
        noValidate
        onSubmit={(e) => {
          e.preventDefault();
          void attempt(setBusy, setError, async () => {
            const { data } = await call(
              'create tracking plans',
              client.POST('/api/v1/tracking-plans/import', { body: { format, name, content } }),
            );
            location.hash = `#/tracking-plans/${data.id}/draft`;
          });
        }}
      >
        <div class="field">
          <label for="import-format">Format</label>
          <select
            id="import-format"
            value={format}
            onChange={(e) => setFormat(e.currentTarget.value as 'segment' | 'rudderstack')}
          >
            <option value="segment">Segment tracking plan (JSON rules)</option>
            <option value="rudderstack">RudderStack (Rudder CLI YAML)</option>
          </select>
        </div>
        <Field path="import.name" label="Name" errors={fields.name ? { 'import.name': fields.name } : {}}>
          {(props) => (
            <input
              {...props}
              name="import-name"
              value={name}
              onInput={(e) => setName(e.currentTarget.value)}
            />
          )}
        </Field>
        <ProblemsField
          id="import-content"
          label={format === 'segment' ? 'Segment rules (JSON)' : 'Rudder CLI YAML files'}
          hint={
            format === 'segment'
              ? 'The rules as Segment’s Public API lists them: { "rules": [...] } or its whole answer.'
              : 'The project’s files (events, properties, tp) one after another, separated by a line ---.'
          }
          problems={problems}
          pointerInto={
            error instanceof ApiError && error.problem.code === 'invalid_import' ? 'content' : 'plan'
          }
        >
          {(props) => (
            <textarea
              {...props}
              class="code"
              rows={12}
              spellcheck={false}
              value={content}
              onInput={(e) => setContent(e.currentTarget.value)}
            />
          )}
        </ProblemsField>
        {problems.length === 0 ? <FormError error={error} errors={{}} /> : null}
        <button type="submit" class="primary" disabled={busy}>
          {busy ? 'Importing…' : 'Import'}
        </button>
      </form>
    </section>
  );
}

/**
 * A textarea with the API's problems beside it, each with its JSON Pointer: tied to the input
 * (aria-describedby, aria-invalid) so a screen reader reads them with it.
 */
function ProblemsField({
  id,
  label,
  hint,
  problems,
  pointerInto,
  localError,
  children,
}: {
  id: string;
  label: string;
  hint?: ComponentChildren;
  problems: PlanProblem[];
  /** What the pointers point into, said in the list's heading. */
  pointerInto: string;
  /** A problem found before sending (not JSON). */
  localError?: string | null;
  children: (props: {
    id: string;
    'aria-invalid': boolean;
    'aria-describedby'?: string;
  }) => ComponentChildren;
}) {
  const invalid = problems.length > 0 || Boolean(localError);
  const described = [hint ? `${id}-hint` : null, invalid ? `${id}-problems` : null].filter(Boolean).join(' ');
  return (
    <div class="field problems-field">
      <label for={id}>{label}</label>
      <div class="editor-with-problems">
        {children({ id, 'aria-invalid': invalid, 'aria-describedby': described || undefined })}
        {invalid ? (
          <div class="problems" id={`${id}-problems`} role="alert">
            {localError ? (
              <p class="field-error">{localError}</p>
            ) : (
              <ProblemList problems={problems} pointerInto={pointerInto} />
            )}
          </div>
        ) : null}
      </div>
      {hint ? (
        <span id={`${id}-hint`} class="muted hint">
          {hint}
        </span>
      ) : null}
    </div>
  );
}

/** The API's problems, each with its JSON Pointer into what was sent and its code. */
export function ProblemList({ problems, pointerInto }: { problems: PlanProblem[]; pointerInto: string }) {
  return (
    <>
      <p class="field-error">
        {problems.length} problem{problems.length === 1 ? '' : 's'} (JSON Pointers into the {pointerInto}):
      </p>
      <ul class="problem-list">
        {problems.map((p, i) => (
          <li key={i}>
            <code class="pointer">{p.path === '' ? '(the whole document)' : p.path}</code>{' '}
            {p.code ? <span class="badge bad">{p.code}</span> : null} {p.message}
          </li>
        ))}
      </ul>
    </>
  );
}

export function TrackingPlanPage({ id, tab, rest }: { id: string; tab: PlanTab; rest: string[] }) {
  const [loaded, reload] = useLoad(
    () => call('read tracking plans', client.GET('/api/v1/tracking-plans/{planId}', planPath(id))),
    [id],
  );
  return (
    <>
      <p>
        <a href="#/tracking-plans">← Tracking plans</a>
      </p>
      <Show loaded={loaded}>
        {({ data: plan }) => (
          <>
            <h1>{plan.name}</h1>
            {plan.description ? <p>{plan.description}</p> : null}
            <dl class="facts">
              <dt>Latest version</dt>
              <dd>{plan.latestVersion ?? <span class="muted">none published</span>}</dd>
              <dt>Draft</dt>
              <dd>
                {plan.draftChanged ? (
                  <span class="badge warn">changed since the latest version</span>
                ) : (
                  'the same as the latest version'
                )}
              </dd>
              <dt>Write keys bound</dt>
              <dd>{plan.boundWriteKeys}</dd>
              <dt>Draft hash</dt>
              <dd>
                <code class="hash">{plan.draftHash}</code>
              </dd>
            </dl>
            <Allowed scope="tracking_plans.write">
              <PlanSettings plan={plan} onChanged={reload} />
            </Allowed>
            <nav class="tabs" aria-label="Plan">
              <ul>
                {PLAN_TABS.map((t) => (
                  <li key={t.id}>
                    <a
                      href={`#/tracking-plans/${plan.id}/${t.id}`}
                      aria-current={t.id === tab ? 'page' : undefined}
                    >
                      {t.label}
                    </a>
                  </li>
                ))}
              </ul>
            </nav>
            {tab === 'draft' ? <DraftTab plan={plan} onChanged={reload} /> : null}
            {tab === 'versions' ? <VersionsTab plan={plan} /> : null}
            {tab === 'diff' ? <DiffTab plan={plan} from={rest[0]} to={rest[1]} /> : null}
            {tab === 'quarantine' ? <QuarantineTab plan={plan} eventId={rest[0]} /> : null}
            {tab === 'violations' ? <ViolationsTab plan={plan} /> : null}
          </>
        )}
      </Show>
    </>
  );
}

/** Rename, describe and delete a plan (PATCH, DELETE /api/v1/tracking-plans/{id}). */
function PlanSettings({ plan, onChanged }: { plan: Plan; onChanged: () => void }) {
  const [name, setName] = useState(plan.name);
  const [description, setDescription] = useState(plan.description);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const [asking, setAsking] = useState(false);
  const fields = fieldErrorsOf(error);
  const inUse = error instanceof ApiError && error.problem.code === 'tracking_plan_in_use';
  return (
    <div class="plan-settings">
      <details class="edit">
        <summary>Edit name and description</summary>
        <form
          class="form"
          noValidate
          onSubmit={(e) => {
            e.preventDefault();
            void attempt(setBusy, setError, async () => {
              await call(
                'change tracking plans',
                client.PATCH('/api/v1/tracking-plans/{planId}', {
                  ...planPath(plan.id),
                  body: { name, description },
                }),
              );
              onChanged();
            });
          }}
        >
          <Field path="name" label="Name" errors={fields}>
            {(props) => (
              <input {...props} name="name" value={name} onInput={(e) => setName(e.currentTarget.value)} />
            )}
          </Field>
          <Field path="description" label="Description" errors={fields}>
            {(props) => (
              <input
                {...props}
                name="description"
                value={description}
                onInput={(e) => setDescription(e.currentTarget.value)}
              />
            )}
          </Field>
          <button type="submit" class="primary" disabled={busy}>
            Save name and description
          </button>
        </form>
      </details>
      <div class="actions">
        {asking ? (
          <div class="confirm" role="group" aria-label={`Confirm: delete “${plan.name}”`}>
            <p>Delete “{plan.name}” and every version of it? This cannot be undone.</p>
            <button
              type="button"
              class="small danger"
              disabled={busy}
              onClick={() =>
                void attempt(setBusy, setError, async () => {
                  await call(
                    'change tracking plans',
                    client.DELETE('/api/v1/tracking-plans/{planId}', planPath(plan.id)),
                  );
                  location.hash = '#/tracking-plans';
                })
              }
            >
              Delete now
            </button>{' '}
            <button type="button" class="small" disabled={busy} onClick={() => setAsking(false)}>
              Cancel
            </button>
          </div>
        ) : (
          <button type="button" class="small danger" onClick={() => setAsking(true)}>
            Delete the plan
          </button>
        )}
      </div>
      {inUse ? (
        <p class="notice error" role="alert">
          A write key binds this plan ({plan.boundWriteKeys} in all): unbind it on the key&apos;s page first
          (tracking_plan_in_use).
        </p>
      ) : error ? (
        <FormError error={error} errors={fields} shown={['name', 'description']} />
      ) : null}
    </div>
  );
}

const pretty = (value: unknown) => JSON.stringify(value, null, 2);

function DraftTab({ plan, onChanged }: { plan: Plan; onChanged: () => void }) {
  const { can } = useAccess();
  const saved = pretty(plan.draft);
  const [text, setText] = useState(saved);
  const [localError, setLocalError] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [outcome, setOutcome] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const editable = can('tracking_plans.write');
  const unsaved = text !== saved;
  const problems = problemsOf(error);

  const save = () => {
    setOutcome(null);
    const parsed = parseDraft(text);
    setLocalError(parsed.ok ? null : parsed.message);
    if (!parsed.ok) return;
    void attempt(setBusy, setError, async () => {
      const { data } = await call(
        'change tracking plans',
        client.PUT('/api/v1/tracking-plans/{planId}/draft', {
          ...planPath(plan.id),
          body: parsed.value as components['schemas']['PlanDocumentInput'],
        }),
      );
      // The saved draft as the API keeps it, so "unsaved" compares with what is stored.
      setText(pretty(data.draft));
      setOutcome('Draft saved.');
      onChanged();
    });
  };

  const publish = () => {
    setOutcome(null);
    void attempt(setBusy, setError, async () => {
      const { data } = await call(
        'change tracking plans',
        client.POST('/api/v1/tracking-plans/{planId}/publish', planPath(plan.id)),
      );
      setOutcome(`Published version ${data.version}.`);
      onChanged();
    });
  };

  const unchanged = error instanceof ApiError && error.problem.code === 'draft_unchanged';
  return (
    <section aria-labelledby="draft-heading">
      <h2 id="draft-heading">Draft</h2>
      <p class="muted">
        The plan document as JSON:{' '}
        <code>{'{ "common"?, "rules": [{ "type", "name"?, "version"?, "schema" }] }'}</code>, each schema a
        JSON Schema of the whole event (docs/tracking-plans.md).
      </p>
      <ProblemsField
        id="plan-draft"
        label="Plan document (JSON)"
        problems={problems}
        pointerInto="plan"
        localError={localError}
      >
        {(props) => (
          <textarea
            {...props}
            class="code"
            rows={Math.min(40, Math.max(12, text.split('\n').length + 1))}
            spellcheck={false}
            readOnly={!editable}
            value={text}
            onInput={(e) => {
              setText(e.currentTarget.value);
              setLocalError(null);
            }}
          />
        )}
      </ProblemsField>
      {outcome ? (
        <p class="notice good" role="status">
          {outcome}
        </p>
      ) : null}
      {unchanged ? (
        <p class="notice error" role="alert">
          Nothing to publish: the draft is the same as version {plan.latestVersion} (draft_unchanged). Change
          the draft and save it first.
        </p>
      ) : problems.length === 0 && error ? (
        <ErrorNotice error={error} />
      ) : null}
      <Allowed scope="tracking_plans.write">
        <div class="actions">
          <button type="button" class="primary" disabled={busy || !unsaved} onClick={save}>
            Save draft
          </button>
          <button
            type="button"
            disabled={busy || unsaved}
            onClick={publish}
            title={unsaved ? 'Save the draft first: publishing freezes the saved draft' : undefined}
          >
            Publish
          </button>
          {unsaved ? <span class="muted">Unsaved changes: publishing freezes the saved draft.</span> : null}
        </div>
      </Allowed>
    </section>
  );
}

function VersionsTab({ plan }: { plan: Plan }) {
  const [loaded] = useLoad(
    () =>
      call(
        'read tracking plans',
        client.GET('/api/v1/tracking-plans/{planId}/versions', {
          params: { path: { planId: plan.id }, query: { limit: 100 } },
        }),
      ),
    [plan.id, plan.latestVersion],
  );
  const [open, setOpen] = useState<number | null>(null);
  return (
    <section aria-labelledby="versions-heading">
      <h2 id="versions-heading">Versions</h2>
      <Show loaded={loaded}>
        {({ data, pagination }) =>
          data.length === 0 ? (
            <p class="muted">Nothing published yet: publish the draft to make version 1.</p>
          ) : (
            <>
              {pagination.total > data.length ? (
                <p class="muted">
                  The {data.length} newest of {pagination.total}.
                </p>
              ) : null}
              <table>
                <thead>
                  <tr>
                    <th scope="col">Version</th>
                    <th scope="col">Published</th>
                    <th scope="col">Hash</th>
                    <th scope="col">Actions</th>
                  </tr>
                </thead>
                <tbody>
                  {data.map((v) => (
                    <tr key={v.version} data-version={v.version}>
                      <td>v{v.version}</td>
                      <td>
                        <Time at={v.publishedAt} />
                      </td>
                      <td>
                        <code class="hash" title={v.hash}>
                          {v.hash.slice(0, 12)}
                        </code>
                      </td>
                      <td>
                        <div class="version-actions">
                          <button
                            type="button"
                            class="small"
                            onClick={() => setOpen(open === v.version ? null : v.version)}
                          >
                            {open === v.version ? `Hide v${v.version}` : `Show v${v.version}`}
                          </button>
                          <a class="button" href={`#/tracking-plans/${plan.id}/diff/${v.version}/draft`}>
                            Diff v{v.version} → draft
                          </a>
                          {v.version > 1 ? (
                            <a
                              class="button"
                              href={`#/tracking-plans/${plan.id}/diff/${v.version - 1}/${v.version}`}
                            >
                              Diff v{v.version - 1} → v{v.version}
                            </a>
                          ) : null}
                          <ExportButton plan={plan} version={v.version} />
                        </div>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
              {open !== null ? <VersionDocument planId={plan.id} version={open} /> : null}
            </>
          )
        }
      </Show>
    </section>
  );
}

function VersionDocument({ planId, version }: { planId: string; version: number }) {
  const [loaded] = useLoad(
    () =>
      call(
        'read tracking plans',
        client.GET('/api/v1/tracking-plans/{planId}/versions/{version}', {
          params: { path: { planId, version } },
        }),
      ),
    [planId, version],
  );
  return (
    <section aria-labelledby="version-document-heading">
      <h3 id="version-document-heading">Version {version}</h3>
      <Show loaded={loaded}>
        {({ data }) => (
          <>
            <p class="muted">
              Hash <code class="hash">{data.hash}</code>, published <Time at={data.publishedAt} />.
            </p>
            <Json value={data.plan} label={`Version ${version} of the plan`} />
          </>
        )}
      </Show>
    </section>
  );
}

/** Downloads a version as Segment's rules (a file made in the page from the API's answer). */
function ExportButton({ plan, version }: { plan: Plan; version: number }) {
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  return (
    <>
      <button
        type="button"
        class="small"
        disabled={busy}
        onClick={() =>
          void attempt(setBusy, setError, async () => {
            const answer = await call(
              'read tracking plans',
              client.GET('/api/v1/tracking-plans/{planId}/versions/{version}/export', {
                params: { path: { planId: plan.id, version }, query: { format: 'segment' } },
              }),
            );
            const url = URL.createObjectURL(
              new Blob([`${JSON.stringify(answer.data, null, 2)}\n`], { type: 'application/json' }),
            );
            const link = document.createElement('a');
            link.href = url;
            link.download = exportFileName(plan.name, version);
            document.body.append(link);
            link.click();
            link.remove();
            setTimeout(() => URL.revokeObjectURL(url), 10_000);
          })
        }
      >
        Export v{version} (Segment)
      </button>
      {error ? (
        error instanceof ApiError && error.problem.code === 'not_exportable' ? (
          <span class="field-error" role="alert">
            Segment has no place for this version:{' '}
            {problemsOf(error)
              .map((p) => `${p.path} ${p.message}`)
              .join('; ') || error.message}
          </span>
        ) : (
          <ErrorNotice error={error} />
        )
      ) : null}
    </>
  );
}

const kindTone: Record<Change['kind'], string> = { breaking: 'bad', revision: 'warn', addition: 'good' };

function ruleLabel(rule: Change['rule']): string {
  if (rule.type === 'common') return 'common schema';
  return `${rule.type}${rule.name !== undefined ? ` “${rule.name}”` : ''}${rule.version !== undefined ? ` v${rule.version}` : ''}`;
}

function DiffTab({ plan, from, to }: { plan: Plan; from: string | undefined; to: string | undefined }) {
  const latest = plan.latestVersion;
  if (latest === null)
    return (
      <section aria-labelledby="diff-heading">
        <h2 id="diff-heading">Diff</h2>
        <p class="muted">Nothing published yet: a diff compares a version with another or with the draft.</p>
      </section>
    );
  const fromVersion =
    from && /^[1-9][0-9]*$/.test(from) ? Number(from) : Math.max(1, latest - (plan.draftChanged ? 0 : 1));
  const toSide =
    to === 'draft' || (to && /^[1-9][0-9]*$/.test(to)) ? to : plan.draftChanged ? 'draft' : String(latest);
  const versions = Array.from({ length: latest }, (_, i) => latest - i);
  const go = (f: number, t: string) => (location.hash = `#/tracking-plans/${plan.id}/diff/${f}/${t}`);
  return (
    <section aria-labelledby="diff-heading">
      <h2 id="diff-heading">Diff</h2>
      <div class="actions">
        <label for="diff-from">From</label>
        <select
          id="diff-from"
          value={String(fromVersion)}
          onChange={(e) => go(Number(e.currentTarget.value), toSide)}
        >
          {versions.map((v) => (
            <option key={v} value={String(v)}>
              v{v}
            </option>
          ))}
        </select>
        <label for="diff-to">To</label>
        <select id="diff-to" value={toSide} onChange={(e) => go(fromVersion, e.currentTarget.value)}>
          <option value="draft">the draft</option>
          {versions.map((v) => (
            <option key={v} value={String(v)}>
              v{v}
            </option>
          ))}
        </select>
      </div>
      <DiffResult planId={plan.id} from={fromVersion} to={toSide} />
    </section>
  );
}

function DiffResult({ planId, from, to }: { planId: string; from: number; to: string }) {
  const [loaded] = useLoad(
    () =>
      call(
        'read tracking plans',
        client.GET('/api/v1/tracking-plans/{planId}/diff', {
          params: { path: { planId }, query: { from, to } },
        }),
      ),
    [planId, from, to],
  );
  return (
    <Show loaded={loaded}>
      {({ data }) => (
        <div
          aria-label={`Changes from v${data.from} to ${data.to === 'draft' ? 'the draft' : `v${data.to}`}`}
          role="region"
        >
          <p>
            From v{data.from} to {data.to === 'draft' ? 'the draft' : `v${data.to}`}:{' '}
            <span class="badge bad">{data.counts.breaking} breaking</span>{' '}
            <span class="badge warn">{data.counts.revision} revision</span>{' '}
            <span class="badge good">{data.counts.addition} addition</span>
          </p>
          {data.changes.length === 0 ? (
            <p class="muted">No changes.</p>
          ) : (
            <table class="stack">
              <thead>
                <tr>
                  <th scope="col">Kind</th>
                  <th scope="col">Rule</th>
                  <th scope="col">Path</th>
                  <th scope="col">Change</th>
                  <th scope="col">What changed</th>
                </tr>
              </thead>
              <tbody>
                {data.changes.map((c, i) => (
                  <tr key={i} data-change-kind={c.kind}>
                    <td data-label="Kind">
                      <span class={`badge ${kindTone[c.kind]}`}>{c.kind}</span>
                    </td>
                    <td data-label="Rule">{ruleLabel(c.rule)}</td>
                    <td data-label="Path">
                      <code class="pointer">{c.path}</code>
                    </td>
                    <td data-label="Change">
                      <code>{c.change}</code>
                    </td>
                    <td data-label="What changed">{c.message}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </div>
      )}
    </Show>
  );
}
