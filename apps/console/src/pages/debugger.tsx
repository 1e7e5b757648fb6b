import { Fragment } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, call, client, readEventStream } from '../api';
import type { DebugEvent, DebugPlanDecision, Delivery } from '../types';
import { Badge, ErrorNotice, Json, Show, Time, useLoad } from '../ui';

const KEEP = 200;
const TYPES = ['track', 'page', 'identify', 'group', 'alias', 'screen'];

interface Filters {
  status: '' | 'accepted' | 'rejected';
  type: string;
  event: string;
  /** Only events with a tracking-plan violation, or whose plan could not be read. */
  violations: boolean;
}

/** As the API's `violations=true` decides (debugger.service.ts, hasPlanFindings). */
const hasPlanFindings = (e: DebugEvent) =>
  e.plan !== undefined && (e.plan.version === null || (e.violations?.length ?? 0) > 0);

function matches(e: DebugEvent, f: Filters): boolean {
  return (
    (!f.status || e.status === f.status) &&
    (!f.type || e.type === f.type) &&
    (!f.event || (e.event ?? '') === f.event) &&
    (!f.violations || hasPlanFindings(e))
  );
}

function query(f: Filters) {
  return {
    limit: 50,
    status: f.status || undefined,
    type: f.type || undefined,
    event: f.event || undefined,
    violations: f.violations || undefined,
  };
}

/**
 * The live debugger of one write key: the latest events (GET .../events), then each new one as
 * it arrives (the SSE stream read with fetch), rejected ones in red with their errors; a click
 * shows the whole event and its delivery outcomes.
 */
export function Debugger({ writeKeyId }: { writeKeyId: string }) {
  const [filters, setFilters] = useState<Filters>({
    status: '',
    type: '',
    event: '',
    violations: false,
  });
  const [eventInput, setEventInput] = useState('');
  const [events, setEvents] = useState<DebugEvent[]>([]);
  const [live, setLive] = useState<'connecting' | 'live' | 'reconnecting' | 'stopped'>('connecting');
  const [error, setError] = useState<unknown>(null);
  const [selected, setSelected] = useState<DebugEvent | null>(null);
  const base = `/api/v1/write-keys/${encodeURIComponent(writeKeyId)}/events`;
  const filtersRef = useRef(filters);
  filtersRef.current = filters;

  useEffect(() => {
    const abort = new AbortController();
    setEvents([]);
    setError(null);
    setLive('connecting');
    void (async () => {
      let last: string | null = null;
      try {
        const { data } = await call(
          'read write keys',
          client.GET('/api/v1/write-keys/{writeKeyId}/events', {
            params: { path: { writeKeyId }, query: query(filters) },
          }),
        );
        setEvents(data);
        last = data[0]?.id ?? null;
      } catch (e) {
        setError(e);
        setLive('stopped');
        return;
      }
      let delay = 500;
      while (!abort.signal.aborted) {
        try {
          last = await readEventStream(
            `${base}/stream`,
            (data) => {
              const event = JSON.parse(data) as DebugEvent;
              if (!matches(event, filtersRef.current)) return;
              setEvents((list) =>
                list.some((e) => e.id === event.id) ? list : [event, ...list].slice(0, KEEP),
              );
            },
            abort.signal,
            last,
            () => setLive('live'),
          );
          delay = 500;
        } catch (e) {
          if (abort.signal.aborted) return;
          if (e instanceof ApiError && e.problem.status >= 400 && e.problem.status < 500) {
            setError(e);
            setLive('stopped');
            return;
          }
        }
        if (abort.signal.aborted) return;
        setLive('reconnecting');
        await new Promise((resolve) => setTimeout(resolve, delay));
        delay = Math.min(delay * 2, 10_000);
      }
    })();
    return () => abort.abort();
  }, [base, filters]);

  return (
    <section aria-labelledby="debugger-heading" class="debugger">
      <h2 id="debugger-heading">
        Live debugger{' '}
        <span class={`live ${live}`} role="status">
          {live === 'live' ? '● live' : live === 'stopped' ? 'stopped' : `${live}…`}
        </span>
      </h2>
      <form
        class="fields"
        onSubmit={(e) => {
          e.preventDefault();
          setFilters({ ...filters, event: eventInput.trim() });
        }}
      >
        <label>
          Status
          <select
            value={filters.status}
            onChange={(e) => setFilters({ ...filters, status: e.currentTarget.value as Filters['status'] })}
          >
            <option value="">all</option>
            <option value="accepted">accepted</option>
            <option value="rejected">rejected</option>
          </select>
        </label>
        <label>
          Type
          <select
            value={filters.type}
            onChange={(e) => setFilters({ ...filters, type: e.currentTarget.value })}
          >
            <option value="">all</option>
            {TYPES.map((t) => (
              <option key={t} value={t}>
                {t}
              </option>
            ))}
          </select>
        </label>
        <label>
          Event name
          <input value={eventInput} onInput={(e) => setEventInput(e.currentTarget.value)} />
        </label>
        <label class="inline">
          <input
            type="checkbox"
            checked={filters.violations}
            onChange={(e) => setFilters({ ...filters, violations: e.currentTarget.checked })}
          />
          Violations only
        </label>
        <button type="submit">Filter</button>
      </form>
      {error ? <ErrorNotice error={error} /> : null}
      <div class="debugger-panes">
        <ol class="events" aria-label="Events, newest first">
          {events.length === 0 && !error ? (
            <li class="muted">No events yet: send one, it shows up here within a second.</li>
          ) : null}
          {events.map((e) => (
            <li key={e.id} class={e.status}>
              <button
                type="button"
                class="event-row"
                aria-pressed={selected?.id === e.id}
                onClick={() => setSelected(e)}
                data-message-id={e.messageId ?? ''}
              >
                <span class="when">{new Date(e.receivedAt).toLocaleTimeString()}</span>
                <Badge value={e.status} />
                <span class="type">{e.type ?? 'unparsed'}</span>
                <span class="name">{e.event ?? ''}</span>
                {e.plan?.version === null ? <span class="violation">plan unavailable</span> : null}
                {(e.violations ?? []).map((v, i) => (
                  <span key={i} class="violation" title={v.message}>
                    {v.code} <code>{v.path}</code>
                  </span>
                ))}
                {e.status === 'rejected' ? (
                  <span class="errors">
                    {e.errors.map((x) => `${x.path ? `${x.path}: ` : ''}${x.message}`).join('; ')}
                  </span>
                ) : null}
              </button>
            </li>
          ))}
        </ol>
        {selected ? (
          <EventDetail writeKeyId={writeKeyId} event={selected} onClose={() => setSelected(null)} />
        ) : null}
      </div>
    </section>
  );
}

function EventDetail({
  writeKeyId,
  event,
  onClose,
}: {
  writeKeyId: string;
  event: DebugEvent;
  onClose: () => void;
}) {
  const [deliveries, reload] = useLoad(
    () =>
      event.messageId
        ? call(
            'read write keys',
            client.GET('/api/v1/write-keys/{writeKeyId}/events/{messageId}/deliveries', {
              params: { path: { writeKeyId, messageId: event.messageId } },
            }),
          )
        : Promise.resolve({ data: [] as Delivery[] }),
    [writeKeyId, event.id],
  );
  return (
    <article class="event-detail" aria-labelledby="event-detail-heading">
      <h3 id="event-detail-heading">
        {event.type ?? 'Unparsed request'} {event.event ? `“${event.event}”` : ''}
      </h3>
      <dl class="facts">
        <dt>Status</dt>
        <dd>
          <Badge value={event.status} />
        </dd>
        <dt>Received</dt>
        <dd>
          <Time at={event.receivedAt} />
        </dd>
        <dt>Message id</dt>
        <dd class="mono">{event.messageId ?? '—'}</dd>
        <dt>Request id</dt>
        <dd class="mono">{event.requestId}</dd>
      </dl>
      {event.errors.length > 0 ? (
        <>
          <h4>Errors</h4>
          <ul class="error-list">
            {event.errors.map((x, i) => (
              <li key={i}>
                <code>{x.path || '(request)'}</code> {x.message}{' '}
                {x.code ? <span class="muted">({x.code})</span> : null}
              </li>
            ))}
          </ul>
        </>
      ) : null}
      {event.plan ? <PlanFindings event={event} /> : null}
      <h4>
        Deliveries{' '}
        <button type="button" class="small" onClick={reload}>
          Refresh
        </button>
      </h4>
      <Show loaded={deliveries}>
        {({ data }) =>
          data.length === 0 ? (
            <p class="muted">
              {event.status === 'rejected'
                ? 'Rejected events are not delivered.'
                : 'No delivery outcome yet.'}
            </p>
          ) : (
            <table class="deliveries">
              <thead>
                <tr>
                  <th scope="col">Destination</th>
                  <th scope="col">Outcome</th>
                  <th scope="col">Reason</th>
                  <th scope="col">At</th>
                </tr>
              </thead>
              <tbody>
                {data.map((d, i) => (
                  <tr key={i}>
                    <td>{d.destination}</td>
                    <td>
                      <Badge value={d.outcome} />
                    </td>
                    <td>
                      {d.reason ?? ''}
                      {d.omitted?.length ? `omitted ${d.omitted.join(', ')}` : ''}
                    </td>
                    <td>
                      <Time at={d.at} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )
        }
      </Show>
      <h4>Event as received</h4>
      <Json value={event.payload} label="The event as received" />
      <button type="button" onClick={onClose}>
        Close
      </button>
    </article>
  );
}

/** One destination's action: a badge, and what `omit` stripped. */
function ActionTaken({ decision }: { decision: DebugPlanDecision }) {
  return (
    <>
      <span class={`action ${decision.action}`}>{decision.action}</span>
      {decision.omitted.length > 0 ? (
        <>
          {' '}
          without <code>{decision.omitted.join(', ')}</code>
        </>
      ) : null}
    </>
  );
}

/** An event's tracking plan: its violations, and what the binding's policy does with it where. */
function PlanFindings({ event }: { event: DebugEvent }) {
  const { plan, violations = [], planAction } = event;
  if (!plan) return null;
  const overrides = Object.entries(planAction?.destinations ?? {});
  return (
    <section class="plan-findings" aria-labelledby="plan-findings-heading">
      <h4 id="plan-findings-heading">Tracking plan</h4>
      <p>
        {plan.version === null ? (
          <span class="violation">
            plan unavailable: the event was not checked and is delivered as it came
          </span>
        ) : (
          <>
            Held to version {plan.version}:{' '}
            {violations.length === 0 ? 'no violations.' : `${violations.length} violation(s).`}
          </>
        )}
      </p>
      {violations.length > 0 ? (
        <ul class="violation-list" aria-label="Violations">
          {violations.map((v, i) => (
            <li key={i}>
              <span class="violation">{v.code}</span> <code>{v.path}</code> {v.message}
            </li>
          ))}
        </ul>
      ) : null}
      {planAction ? (
        <dl class="facts plan-action" aria-label="Action taken">
          <dt>{overrides.length > 0 ? 'Action (warehouse and others)' : 'Action'}</dt>
          <dd>
            <ActionTaken decision={planAction} />
          </dd>
          {overrides.map(([destination, decision]) => (
            <Fragment key={destination}>
              <dt>
                Action at <code>{destination}</code>
              </dt>
              <dd>
                <ActionTaken decision={decision} />
              </dd>
            </Fragment>
          ))}
        </dl>
      ) : null}
    </section>
  );
}
