import { useEffect, useState } from 'preact/hooks';
import { Allowed } from '../access';
import { ApiError, call, client } from '../api';
import { Field, FormError, fieldErrorsOf } from '../field-errors';
import {
  inputKey,
  idsOf,
  MAX_IDS,
  overallTone,
  TARGET_LABELS,
  targetTone,
  TYPES,
  type RegulationType,
  type SubjectType,
  type Tone,
} from '../regulations';
import type { DryRun, Regulation, RegulationTarget, Suppression } from '../types';
import { ErrorNotice, LastError, Show, Time, useLoad } from '../ui';

// The Privacy page (docs/privacy.md): regulations created with a dry run first, their status per
// target, and the suppressed subjects with Lift. Raw subject ids are sent once, in the create call;
// nothing the page reads back holds one (suppressions carry a keyed hash).

function Status({ tone, label }: { tone: Tone; label: string }) {
  return <span class={`badge ${tone}`}>{label}</span>;
}

const finished = (r: Regulation) => r.overallStatus !== 'INITIALIZED' && r.overallStatus !== 'RUNNING';

const PAGE = 20;

export function Privacy() {
  const [created, setCreated] = useState<{ id: string; type: string; count: number } | null>(null);
  const [changes, setChanges] = useState(0);
  return (
    <>
      <h1>Privacy</h1>
      <p class="muted">
        Erase a person from every warehouse, our own copies (dead letters, the debugger) and the destinations
        their events went to, and refuse their new events. Each request is a regulation with a status per
        target. The same API as Segment&apos;s: <code>/api/v1/regulations</code>.
      </p>
      <Allowed scope="regulations.write">
        <NewRegulation
          onCreated={(c) => {
            setCreated(c);
            setChanges((n) => n + 1);
          }}
        />
      </Allowed>
      {created ? (
        <p class="notice good" role="status">
          Regulation <code>{created.id}</code> ({created.type}) created for {created.count} subject
          {created.count === 1 ? '' : 's'}: its targets are below.
        </p>
      ) : null}
      <Regulations changes={changes} />
      <Suppressions changes={changes} onLifted={() => setChanges((n) => n + 1)} />
    </>
  );
}

function NewRegulation({
  onCreated,
}: {
  onCreated: (c: { id: string; type: string; count: number }) => void;
}) {
  const [type, setType] = useState<RegulationType>('SUPPRESS_WITH_DELETE');
  const [subjectType, setSubjectType] = useState<SubjectType>('USER_ID');
  const [text, setText] = useState('');
  const [preview, setPreview] = useState<{ key: string; result: DryRun } | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [localError, setLocalError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const ids = idsOf(text);
  const key = inputKey(type, subjectType, ids);
  const current = preview?.key === key ? preview.result : null;
  const fields = fieldErrorsOf(error);
  if (localError) fields.subjectIds = localError;

  const checkIds = (): boolean => {
    const problem =
      ids.length === 0
        ? 'Enter at least one id.'
        : ids.length > MAX_IDS
          ? `At most ${MAX_IDS.toLocaleString('en')} ids a regulation: ${ids.length.toLocaleString('en')} given.`
          : null;
    setLocalError(problem);
    return problem === null;
  };

  const send = (dryRun: boolean) => {
    if (!checkIds()) return;
    setBusy(true);
    setError(null);
    const body = { regulationType: type, subjectType, subjectIds: ids, dryRun };
    call('create regulations', client.POST('/api/v1/regulations', { body })).then(
      ({ data }) => {
        setBusy(false);
        if ('dryRun' in data) {
          setPreview({ key, result: data });
          return;
        }
        setPreview(null);
        setText('');
        onCreated({ id: data.regulateId, type, count: data.regulation.subjectCount });
      },
      (e: unknown) => {
        setBusy(false);
        setError(e);
      },
    );
  };

  return (
    <section aria-labelledby="new-regulation-heading">
      <h2 id="new-regulation-heading">New regulation</h2>
      <form
        class="form regulation-form"
        noValidate
        onSubmit={(e) => {
          e.preventDefault();
          send(true);
        }}
      >
        <Field path="regulationType" label="Type" errors={fields} hint={TYPES[type].says}>
          {(props) => (
            <select
              {...props}
              name="regulationType"
              value={type}
              onChange={(e) => setType(e.currentTarget.value as RegulationType)}
            >
              {(Object.keys(TYPES) as RegulationType[]).map((t) => (
                <option key={t} value={t}>
                  {t}
                </option>
              ))}
            </select>
          )}
        </Field>
        <Field path="subjectType" label="Subject type" errors={fields}>
          {(props) => (
            <select
              {...props}
              name="subjectType"
              value={subjectType}
              onChange={(e) => setSubjectType(e.currentTarget.value as SubjectType)}
            >
              <option value="USER_ID">USER_ID (userId)</option>
              <option value="ANONYMOUS_ID">ANONYMOUS_ID (anonymousId)</option>
            </select>
          )}
        </Field>
        <Field
          path="subjectIds"
          label="Ids"
          errors={fields}
          hint={`One a line, up to ${MAX_IDS.toLocaleString('en')}; spaces at either end of a line are removed, a repeated id counts once. ${ids.length.toLocaleString('en')} id${ids.length === 1 ? '' : 's'} entered.`}
        >
          {(props) => (
            <textarea
              {...props}
              name="subjectIds"
              rows={6}
              spellcheck={false}
              autoComplete="off"
              value={text}
              onInput={(e) => {
                setText(e.currentTarget.value);
                setLocalError(null);
              }}
            />
          )}
        </Field>
        <FormError error={error} errors={fields} shown={['regulationType', 'subjectType', 'subjectIds']} />
        <div class="actions">
          <button type="submit" class={current ? undefined : 'primary'} disabled={busy}>
            {busy && !current ? 'Previewing…' : 'Preview'}
          </button>
          <button
            type="button"
            class={current ? 'primary' : undefined}
            disabled={busy || !current}
            onClick={() => send(false)}
            aria-describedby="create-hint"
          >
            {busy && current ? 'Creating…' : 'Create'}
          </button>
        </div>
        <p id="create-hint" class="muted hint">
          {current
            ? 'Create runs this regulation: deletions cannot be undone.'
            : preview
              ? 'The form changed since the preview: preview it again before creating.'
              : 'Preview first: it shows what would go, and changes nothing.'}
        </p>
      </form>
      {current ? <Preview result={current} type={type} /> : null}
    </section>
  );
}

function Preview({ result, type }: { result: DryRun; type: RegulationType }) {
  const does = TYPES[type];
  const total = result.warehouses.reduce(
    (sum, w) => sum + w.rows.events + w.rows.users + w.rows.groups + w.rows.aliases,
    0,
  );
  return (
    <section class="preview" aria-labelledby="preview-heading">
      <h3 id="preview-heading">
        Preview: {result.regulationType} of {result.subjects.toLocaleString('en')} {result.subjectType}{' '}
        subject
        {result.subjects === 1 ? '' : 's'}
      </h3>
      {does.suppresses ? (
        <p>New events of these subjects are dropped from about 10 seconds after Create.</p>
      ) : null}
      {type === 'UNSUPPRESS' ? (
        <p>New events of these subjects are accepted again. Nothing is restored.</p>
      ) : null}
      {does.deletes ? (
        <>
          <h4>Warehouses</h4>
          {result.warehouses.length === 0 ? (
            <p class="muted">The account has no warehouse.</p>
          ) : (
            <div class="table-scroll">
              <table aria-label="Rows to delete per warehouse">
                <thead>
                  <tr>
                    <th scope="col">Warehouse</th>
                    <th scope="col" class="num">
                      events
                    </th>
                    <th scope="col" class="num">
                      users
                    </th>
                    <th scope="col" class="num">
                      groups
                    </th>
                    <th scope="col" class="num">
                      aliases
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {result.warehouses.map((w) => (
                    <tr key={w.warehouseId}>
                      <th scope="row">{w.name}</th>
                      <td class="num">{w.rows.events.toLocaleString('en')}</td>
                      <td class="num">{w.rows.users.toLocaleString('en')}</td>
                      <td class="num">{w.rows.groups.toLocaleString('en')}</td>
                      <td class="num">{w.rows.aliases.toLocaleString('en')}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
          <p>
            {total.toLocaleString('en')} warehouse row{total === 1 ? '' : 's'};{' '}
            {result.deadLetters.toLocaleString('en')} stored dead letter{result.deadLetters === 1 ? '' : 's'}{' '}
            holding their events; and their events in the live debugger.
          </p>
        </>
      ) : (
        <p class="muted">This type deletes nothing.</p>
      )}
      <h4>Destinations</h4>
      {!does.forwards ? (
        <p class="muted">This type sends no deletion to destinations.</p>
      ) : result.destinations.length === 0 ? (
        <p class="muted">No destination is connected.</p>
      ) : (
        <div class="table-scroll">
          <table class="stack" aria-label="Destinations and their deletion support">
            <thead>
              <tr>
                <th scope="col">Destination</th>
                <th scope="col">App type</th>
                <th scope="col">Deletion</th>
              </tr>
            </thead>
            <tbody>
              {result.destinations.map((d) => (
                <tr key={d.integrationId}>
                  <th scope="row">{d.name}</th>
                  <td data-label="App type">
                    <code>{d.appType}</code>
                  </td>
                  <td data-label="Deletion">
                    {d.deletion === 'supported' ? (
                      <Status tone="good" label="supported" />
                    ) : d.deletion === 'credential_missing' ? (
                      <>
                        <Status tone="bad" label="credential missing" />{' '}
                        <span class="muted">
                          the app lacks the credential its deletion API needs: add it, or this target fails
                        </span>
                      </>
                    ) : (
                      <>
                        <Status tone="neutral" label="not supported" />{' '}
                        <span class="muted">the vendor has no user deletion</span>
                      </>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}

type OverallFilter = '' | Regulation['overallStatus'];

function Regulations({ changes }: { changes: number }) {
  const [status, setStatus] = useState<OverallFilter>('');
  const [offset, setOffset] = useState(0);
  const [loaded, reload] = useLoad(
    () =>
      call(
        'read regulations',
        client.GET('/api/v1/regulations', {
          params: { query: { ...(status ? { status } : {}), limit: PAGE, offset } },
        }),
      ),
    [status, offset, changes],
  );
  // Refreshed every 5 s while one on the page is still running.
  const running = loaded.state === 'done' && loaded.value.data.some((r) => !finished(r));
  useEffect(() => {
    if (!running) return;
    const timer = setInterval(reload, 5000);
    return () => clearInterval(timer);
  }, [running, reload]);
  return (
    <section aria-labelledby="regulations-heading">
      <div class="heading-row">
        <h2 id="regulations-heading">Regulations</h2>
        <button type="button" class="small" onClick={reload}>
          Refresh
        </button>
      </div>
      <div class="fields">
        <label>
          Status
          <select
            value={status}
            onChange={(e) => {
              setStatus(e.currentTarget.value as OverallFilter);
              setOffset(0);
            }}
          >
            <option value="">any</option>
            <option value="INITIALIZED">INITIALIZED</option>
            <option value="RUNNING">RUNNING</option>
            <option value="FINISHED">FINISHED</option>
            <option value="PARTIAL_SUCCESS">PARTIAL_SUCCESS</option>
            <option value="FAILED">FAILED</option>
          </select>
        </label>
      </div>
      <Show loaded={loaded}>
        {({ data, pagination }) =>
          data.length === 0 ? (
            <p class="muted">No regulations{status ? ` with status ${status}` : ''}.</p>
          ) : (
            <>
              {data.map((r) => (
                <RegulationCard key={r.id} regulation={r} />
              ))}
              <Pager offset={offset} count={data.length} total={pagination.total} onOffset={setOffset} />
            </>
          )
        }
      </Show>
    </section>
  );
}

function Pager({
  offset,
  count,
  total,
  onOffset,
}: {
  offset: number;
  count: number;
  total: number;
  onOffset: (offset: number) => void;
}) {
  if (offset === 0 && count >= total) return null;
  return (
    <div class="actions">
      <span class="muted">
        {offset + 1}–{offset + count} of {total}
      </span>
      <button
        type="button"
        class="small"
        disabled={offset === 0}
        onClick={() => onOffset(Math.max(0, offset - PAGE))}
      >
        Newer
      </button>
      <button
        type="button"
        class="small"
        disabled={offset + count >= total}
        onClick={() => onOffset(offset + PAGE)}
      >
        Older
      </button>
    </div>
  );
}

function RegulationCard({ regulation: r }: { regulation: Regulation }) {
  const headingId = `regulation-${r.id}`;
  const counts = new Map<Tone, number>();
  for (const t of r.targets) counts.set(targetTone(t.status), (counts.get(targetTone(t.status)) ?? 0) + 1);
  return (
    <section class="regulation" aria-labelledby={headingId} data-regulation={r.id}>
      <h3 id={headingId}>
        {r.regulationType} · {r.subjectCount.toLocaleString('en')} {r.subjectType} subject
        {r.subjectCount === 1 ? '' : 's'}{' '}
        <Status tone={overallTone(r.overallStatus)} label={r.overallStatus} />
      </h3>
      <dl class="facts">
        <dt>Id</dt>
        <dd class="mono">{r.id}</dd>
        <dt>Created</dt>
        <dd>
          <Time at={r.createdAt} />
        </dd>
        {r.cutoff ? (
          <>
            <dt>Cut-off</dt>
            <dd>
              <Time at={r.cutoff} /> <span class="muted">(events received at or before it are deleted)</span>
            </dd>
          </>
        ) : null}
        <dt>Finished</dt>
        <dd>{r.finishedAt ? <Time at={r.finishedAt} /> : <span class="muted">not yet</span>}</dd>
      </dl>
      {r.targets.length === 0 ? (
        <p class="muted">No targets: this type deletes nothing.</p>
      ) : (
        <details open={!finished(r) || r.overallStatus !== 'FINISHED'}>
          <summary>
            {r.targets.length} target{r.targets.length === 1 ? '' : 's'}
            {counts.get('bad') ? `, ${counts.get('bad')} failed` : ''}
            {counts.get('progress') ? `, ${counts.get('progress')} in progress` : ''}
          </summary>
          <div class="table-scroll">
            <table class="stack" aria-label={`Targets of ${r.id}`}>
              <thead>
                <tr>
                  <th scope="col">Target</th>
                  <th scope="col">Status</th>
                  <th scope="col" class="num">
                    Attempts
                  </th>
                  <th scope="col">Last error</th>
                  <th scope="col">Updated</th>
                </tr>
              </thead>
              <tbody>
                {r.targets.map((t) => (
                  <tr key={t.target} data-target={t.target}>
                    <th scope="row">
                      {t.name}
                      <TargetKind target={t} />
                    </th>
                    <td data-label="Status">
                      <Status tone={targetTone(t.status)} label={TARGET_LABELS[t.status]} />
                      <TargetNote target={t} />
                    </td>
                    <td class="num" data-label="Attempts">
                      {t.attempts}
                    </td>
                    <td data-label="Last error">
                      <LastError error={t.lastError} />
                    </td>
                    <td data-label="Updated">
                      <Time at={t.updatedAt} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </details>
      )}
    </section>
  );
}

/** What a target is, when its name does not say: a warehouse, a destination's app type. */
function TargetKind({ target: t }: { target: RegulationTarget }) {
  const kind = t.kind === 'destination' ? t.appType : t.kind === 'warehouse' ? 'warehouse' : null;
  return kind ? <span class="muted"> ({kind})</span> : null;
}

function TargetNote({ target }: { target: RegulationTarget }) {
  const note =
    target.status === 'forwarded'
      ? 'the vendor accepted the deletion and confirms it later, on its own timeline'
      : target.status === 'not_supported'
        ? 'the vendor has no user deletion: delete the person in its own tools'
        : target.status === 'waiting_fence'
          ? 'starts once the consumers have passed every event received before the cut-off'
          : null;
  return note ? <div class="muted hint">{note}</div> : null;
}

function Suppressions({ changes, onLifted }: { changes: number; onLifted: () => void }) {
  const [offset, setOffset] = useState(0);
  const [find, setFind] = useState<{ subjectType: SubjectType; subjectId: string } | null>(null);
  const [findType, setFindType] = useState<SubjectType>('USER_ID');
  const [findId, setFindId] = useState('');
  const [lifted, setLifted] = useState<string | null>(null);
  const [loaded, reload] = useLoad(
    () =>
      call(
        'read suppressions',
        client.GET('/api/v1/suppressions', {
          params: { query: { limit: PAGE, offset, ...(find ?? {}) } },
        }),
      ),
    [offset, find, changes],
  );
  return (
    <section aria-labelledby="suppressions-heading">
      <h2 id="suppressions-heading">Suppressed subjects</h2>
      <p class="muted">
        New events of these subjects are accepted (as Segment answers them) and dropped, at ingestion and by
        every consumer. Only a keyed hash of each id is kept: find one by its id.
      </p>
      <form
        class="fields"
        onSubmit={(e) => {
          e.preventDefault();
          setOffset(0);
          setFind(findId ? { subjectType: findType, subjectId: findId } : null);
        }}
      >
        <label>
          Subject type
          <select value={findType} onChange={(e) => setFindType(e.currentTarget.value as SubjectType)}>
            <option value="USER_ID">USER_ID</option>
            <option value="ANONYMOUS_ID">ANONYMOUS_ID</option>
          </select>
        </label>
        <label>
          Id
          <input
            value={findId}
            spellcheck={false}
            autoComplete="off"
            onInput={(e) => setFindId(e.currentTarget.value)}
          />
        </label>
        <button type="submit">Find</button>
        {find ? (
          <button
            type="button"
            onClick={() => {
              setFind(null);
              setFindId('');
            }}
          >
            Show all
          </button>
        ) : null}
      </form>
      {lifted ? (
        <p class="notice good" role="status">
          {lifted}
        </p>
      ) : null}
      <Show loaded={loaded}>
        {({ data, pagination }) =>
          data.length === 0 ? (
            <p class="muted">{find ? 'This subject is not suppressed.' : 'No subject is suppressed.'}</p>
          ) : (
            <>
              <div class="table-scroll">
                <table class="stack" aria-label="Suppressed subjects">
                  <thead>
                    <tr>
                      <th scope="col">Subject</th>
                      <th scope="col">Since</th>
                      <th scope="col">Regulation</th>
                      <th scope="col">
                        <span class="visually-hidden">Actions</span>
                      </th>
                    </tr>
                  </thead>
                  <tbody>
                    {data.map((s) => (
                      <SuppressionRow
                        key={`${s.regulateId}:${s.subjectHash}`}
                        suppression={s}
                        onLifted={(text) => {
                          setLifted(text);
                          reload();
                          onLifted();
                        }}
                      />
                    ))}
                  </tbody>
                </table>
              </div>
              <Pager offset={offset} count={data.length} total={pagination.total} onOffset={setOffset} />
            </>
          )
        }
      </Show>
    </section>
  );
}

function SuppressionRow({
  suppression: s,
  onLifted,
}: {
  suppression: Suppression;
  onLifted: (text: string) => void;
}) {
  const [confirming, setConfirming] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const lift = () => {
    setBusy(true);
    setError(null);
    call(
      'lift suppressions',
      client.DELETE('/api/v1/suppressions/{regulateId}', { params: { path: { regulateId: s.regulateId } } }),
    ).then(
      ({ data }) => {
        setBusy(false);
        setConfirming(false);
        onLifted(
          `Lifted: regulation ${data.regulateId} (UNSUPPRESS) lets the subjects of ${s.regulateId} in again.`,
        );
      },
      (e: unknown) => {
        setBusy(false);
        setError(e);
      },
    );
  };
  return (
    <tr data-suppression={s.regulateId}>
      <td>
        <span class="muted">{s.subjectType}</span>{' '}
        <code class="hash" title={s.subjectHash}>
          {s.subjectHash.slice(0, 16)}…
        </code>
      </td>
      <td data-label="Since">
        <Time at={s.since} />
      </td>
      <td class="mono" data-label="Regulation">
        {s.regulateId}
      </td>
      <td>
        <Allowed scope="regulations.write">
          {confirming ? (
            <div class="confirm" role="group" aria-label="Confirm lifting">
              <p>
                Lift the suppression of every subject of regulation <code>{s.regulateId}</code>? Their new
                events are accepted again; nothing deleted comes back.
              </p>
              <div class="actions">
                <button type="button" class="danger" disabled={busy} onClick={lift}>
                  {busy ? 'Lifting…' : 'Lift'}
                </button>
                <button type="button" disabled={busy} onClick={() => setConfirming(false)}>
                  Keep
                </button>
              </div>
              {error ? <LiftError error={error} /> : null}
            </div>
          ) : (
            <button
              type="button"
              class="small"
              aria-label={`Lift the suppression of ${s.subjectHash.slice(0, 16)}`}
              onClick={() => setConfirming(true)}
            >
              Lift
            </button>
          )}
        </Allowed>
      </td>
    </tr>
  );
}

function LiftError({ error }: { error: unknown }) {
  if (error instanceof ApiError && error.problem.code === 'not_suppressed')
    return (
      <p class="notice" role="status">
        Nothing of it is suppressed any more.
      </p>
    );
  return <ErrorNotice error={error} />;
}
