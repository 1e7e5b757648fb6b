import { useState } from 'preact/hooks';
import { useAccess } from '../access';
import { call, client } from '../api';
import { attempt } from '../field-errors';
import type { components } from '../generated/openapi';
import { Json, Show, Time, useLoad, useSelection } from '../ui';
import { ReplayFailure } from './dead-letters';

type Plan = components['schemas']['TrackingPlanView'];
type Status = components['schemas']['QuarantineStatus'];
type Code = components['schemas']['ViolationCode'];

/** The codes in the order the docs list them; tied to the API's enum like violationClasses. */
const codes = [
  'unplanned_event',
  'unplanned_property',
  'missing_required',
  'type_mismatch',
  'value_not_allowed',
  'common_schema',
  'unknown_pinned_version',
] as const satisfies readonly Code[];
type Unlisted = Exclude<Code, (typeof codes)[number]>;
const everyCodeListed: Unlisted extends never ? true : never = true;
void everyCodeListed;

const LIMIT = 100;

/** The list's filters as the API takes them; empty text is no filter. */
interface Filters {
  status: Status;
  code: Code | '';
  name: string;
  writeKeyId: string;
}
const noFilters: Filters = { status: 'quarantined', code: '', name: '', writeKeyId: '' };

/** The filters a replay or a discard of "the filtered set" sends: the plan's, narrowed. */
function selectionOf(planId: string, filters: Filters) {
  return {
    planId,
    ...(filters.code ? { code: filters.code } : {}),
    ...(filters.name ? { name: filters.name } : {}),
    ...(filters.writeKeyId ? { writeKeyId: filters.writeKeyId } : {}),
  };
}

/**
 * A plan's Quarantine tab (#/tracking-plans/<id>/quarantine[/<event id>]): the events its
 * policies kept out of destinations (GET /api/v1/quarantine?planId=), one of them in detail,
 * and replay or discard of the selected rows or of the filtered set. Reading needs
 * tracking_plans.read (the page's own); replay and discard tracking_plans.write.
 */
export function QuarantineTab({ plan, eventId }: { plan: Plan; eventId: string | undefined }) {
  return (
    <section aria-labelledby="quarantine-heading">
      <h2 id="quarantine-heading">Quarantine</h2>
      {eventId ? <QuarantinedEvent planId={plan.id} id={eventId} /> : <QuarantineList plan={plan} />}
    </section>
  );
}

function QuarantineList({ plan }: { plan: Plan }) {
  const { can } = useAccess();
  const writable = can('tracking_plans.write');
  const [draft, setDraft] = useState<Filters>(noFilters);
  const [filters, setFilters] = useState<Filters>(noFilters);
  const { selected, toggle, clear } = useSelection();
  // Kept here: the actions go when nothing is left to act on, their outcome stays.
  const [outcome, setOutcome] = useState<string | null>(null);
  const [loaded, reload] = useLoad(
    () =>
      call(
        'read tracking plans',
        client.GET('/api/v1/quarantine', {
          params: {
            query: { ...selectionOf(plan.id, filters), status: filters.status, limit: LIMIT },
          },
        }),
      ),
    [plan.id, filters],
  );
  // Only held events can be replayed or discarded: the other lists have nothing to act on.
  const actionable = writable && filters.status === 'quarantined';
  return (
    <>
      <p class="muted">
        Events this plan&apos;s policies kept out of a destination, each with its violations. Fix the plan
        (publish a version that accepts them) or the code that sends them, then replay: each event is checked
        again and those that now pass are delivered with their original message ids.
      </p>
      <form
        class="filters actions"
        aria-label="Quarantine filters"
        onSubmit={(e) => {
          e.preventDefault();
          clear();
          setFilters(draft);
        }}
      >
        <label for="quarantine-status">Status</label>
        <select
          id="quarantine-status"
          value={draft.status}
          onChange={(e) => setDraft({ ...draft, status: e.currentTarget.value as Status })}
        >
          <option value="quarantined">quarantined</option>
          <option value="replayed">replayed</option>
          <option value="discarded">discarded</option>
        </select>
        <label for="quarantine-code">Code</label>
        <select
          id="quarantine-code"
          value={draft.code}
          onChange={(e) => setDraft({ ...draft, code: e.currentTarget.value as Code | '' })}
        >
          <option value="">any</option>
          {codes.map((c) => (
            <option key={c} value={c}>
              {c}
            </option>
          ))}
        </select>
        <label for="quarantine-name">Event name</label>
        <input
          id="quarantine-name"
          value={draft.name}
          onInput={(e) => setDraft({ ...draft, name: e.currentTarget.value.trim() })}
        />
        <label for="quarantine-write-key">Write key id</label>
        <input
          id="quarantine-write-key"
          class="mono"
          value={draft.writeKeyId}
          onInput={(e) => setDraft({ ...draft, writeKeyId: e.currentTarget.value.trim() })}
        />
        <button type="submit">Apply filters</button>
      </form>
      {outcome ? (
        <p class="notice good" role="status">
          {outcome}
        </p>
      ) : null}
      <Show loaded={loaded}>
        {({ data, pagination }) => (
          <>
            {actionable && pagination.total > 0 ? (
              <QuarantineActions
                plan={plan}
                filters={filters}
                selected={selected}
                total={pagination.total}
                onStart={() => setOutcome(null)}
                onDone={(said) => {
                  setOutcome(said);
                  clear();
                  reload();
                }}
              />
            ) : null}
            {data.length === 0 ? (
              <p class="muted">No {filters.status} events for these filters.</p>
            ) : (
              <>
                {pagination.total > data.length ? (
                  <p class="muted">
                    The {data.length} received last of {pagination.total}.
                  </p>
                ) : null}
                <table class="stack" aria-label="Quarantined events">
                  <thead>
                    <tr>
                      {actionable ? (
                        <th scope="col">
                          <input
                            type="checkbox"
                            aria-label="Select all shown"
                            checked={data.every((q) => selected.has(q.id))}
                            onChange={(e) =>
                              toggle(
                                data.map((q) => q.id),
                                e.currentTarget.checked,
                              )
                            }
                          />
                        </th>
                      ) : null}
                      <th scope="col">Event</th>
                      <th scope="col">Codes</th>
                      <th scope="col">Destination</th>
                      <th scope="col">Received</th>
                      <th scope="col">Quarantined</th>
                      <th scope="col">Status</th>
                    </tr>
                  </thead>
                  <tbody>
                    {data.map((q) => (
                      <tr key={q.id} data-quarantined={q.id} data-message-id={q.messageId}>
                        {actionable ? (
                          <td data-label="Select">
                            <input
                              type="checkbox"
                              aria-label={`Select ${q.messageId}`}
                              checked={selected.has(q.id)}
                              onChange={(e) => toggle([q.id], e.currentTarget.checked)}
                            />
                          </td>
                        ) : null}
                        <td data-label="Event">
                          <a href={`#/tracking-plans/${plan.id}/quarantine/${q.id}`}>
                            {q.type}
                            {q.name !== null ? ` “${q.name}”` : ''}
                          </a>
                        </td>
                        <td data-label="Codes">
                          {q.codes.map((c) => (
                            <span key={c} class="badge bad">
                              {c}
                            </span>
                          ))}
                        </td>
                        <td data-label="Destination">
                          {q.destination}
                          {q.destinationId !== q.destination ? (
                            <span class="muted mono"> {q.destinationId}</span>
                          ) : null}
                        </td>
                        <td data-label="Received">
                          <Time at={q.receivedAt} />
                        </td>
                        <td data-label="Quarantined">
                          <Time at={q.quarantinedAt} />
                        </td>
                        <td data-label="Status">
                          <span class="badge">{q.status}</span>
                          {q.replayedVersion !== null ? (
                            <span class="muted"> at v{q.replayedVersion}</span>
                          ) : null}
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </>
            )}
          </>
        )}
      </Show>
    </>
  );
}

/** Replay (with an optional version) and discard, of the selected rows or else the filtered set. */
function QuarantineActions({
  plan,
  filters,
  selected,
  total,
  onStart,
  onDone,
}: {
  plan: Plan;
  filters: Filters;
  selected: ReadonlySet<string>;
  total: number;
  onStart: () => void;
  /** With what to say of the result. */
  onDone: (outcome: string) => void;
}) {
  const [version, setVersion] = useState('');
  const [asking, setAsking] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const ids = [...selected];
  const selection = ids.length > 0 ? { ids, planId: plan.id } : selectionOf(plan.id, filters);
  const what = ids.length > 0 ? `the ${ids.length} selected` : `all ${total} filtered`;
  const versionNumber = /^[1-9][0-9]*$/.test(version) ? Number(version) : undefined;
  const replay = () => {
    onStart();
    void attempt(setBusy, setError, async () => {
      const data = await call(
        'change tracking plans',
        client.POST('/api/v1/quarantine/replay', {
          body: { ...selection, ...(versionNumber !== undefined ? { version: versionNumber } : {}) },
        }),
      );
      onDone(
        `Replayed ${data.replayed}, still quarantined ${data.stillQuarantined}, skipped ${data.skipped}.`,
      );
    });
  };
  const discard = () => {
    onStart();
    void attempt(setBusy, setError, async () => {
      const data = await call(
        'change tracking plans',
        client.POST('/api/v1/quarantine/discard', { body: selection }),
      );
      setAsking(false);
      onDone(`Discarded ${data.discarded}, skipped ${data.skipped}.`);
    });
  };
  return (
    <>
      <div class="actions" role="group" aria-label="Replay or discard">
        <label for="quarantine-version">Version</label>
        <input
          id="quarantine-version"
          inputMode="numeric"
          size={6}
          placeholder="latest"
          aria-describedby="quarantine-version-hint"
          value={version}
          onInput={(e) => setVersion(e.currentTarget.value.trim())}
        />
        <span id="quarantine-version-hint" class="muted">
          checked against this published version; the latest when empty
        </span>
        <button
          type="button"
          class="primary"
          disabled={busy || (version !== '' && versionNumber === undefined)}
          onClick={replay}
        >
          Replay {what}
        </button>
        {asking ? (
          <span role="group" aria-label="Confirm: discard">
            Discard {what}? No replay takes them afterwards.{' '}
            <button type="button" class="small danger" disabled={busy} onClick={discard}>
              Discard now
            </button>{' '}
            <button type="button" class="small" disabled={busy} onClick={() => setAsking(false)}>
              Cancel
            </button>
          </span>
        ) : (
          <button type="button" class="danger" disabled={busy} onClick={() => setAsking(true)}>
            Discard {what}
          </button>
        )}
      </div>
      {error ? <ReplayFailure error={error} what="events" /> : null}
    </>
  );
}

/** One quarantined event: its violations (code and JSON Pointer) and the event as received. */
function QuarantinedEvent({ planId, id }: { planId: string; id: string }) {
  const [loaded] = useLoad(
    () =>
      call(
        'read tracking plans',
        client.GET('/api/v1/quarantine/{quarantinedEventId}', {
          params: { path: { quarantinedEventId: id } },
        }),
      ),
    [id],
  );
  return (
    <>
      <p>
        <a href={`#/tracking-plans/${planId}/quarantine`}>← All quarantined events</a>
      </p>
      <Show loaded={loaded}>
        {(q) => (
          <div role="region" aria-label={`Quarantined event ${q.messageId}`}>
            <dl class="facts">
              <dt>Event</dt>
              <dd>
                {q.type}
                {q.name !== null ? ` “${q.name}”` : ''}
              </dd>
              <dt>Message id</dt>
              <dd class="mono">{q.messageId}</dd>
              <dt>Destination</dt>
              <dd>
                {q.destination}
                {q.destinationId !== q.destination ? (
                  <span class="muted mono"> {q.destinationId}</span>
                ) : null}
              </dd>
              <dt>Held to</dt>
              <dd>{q.planVersion !== null ? `v${q.planVersion}` : <span class="muted">unknown</span>}</dd>
              <dt>Write key</dt>
              <dd class="mono">{q.writeKeyId ?? <span class="muted">none</span>}</dd>
              <dt>Received</dt>
              <dd>
                <Time at={q.receivedAt} />
              </dd>
              <dt>Quarantined</dt>
              <dd>
                <Time at={q.quarantinedAt} />
              </dd>
              <dt>Status</dt>
              <dd>
                <span class="badge">{q.status}</span>
                {q.replayedVersion !== null ? ` at v${q.replayedVersion}` : ''}
              </dd>
            </dl>
            <h3>Violations</h3>
            <ul class="problem-list" aria-label="Violations">
              {q.violations.map((v, i) => (
                <li key={i}>
                  <code class="pointer">{v.path === '' ? '(the whole event)' : v.path}</code>{' '}
                  <span class="badge bad">{v.code}</span> {v.message}
                </li>
              ))}
            </ul>
            <h3>Event</h3>
            <Json value={q.event} label={`Event ${q.messageId}`} />
          </div>
        )}
      </Show>
    </>
  );
}
