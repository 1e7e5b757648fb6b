import { Fragment } from 'preact';
import { useState } from 'preact/hooks';
import { call, client } from '../api';
import type { components } from '../generated/openapi';
import { Json, Show, Time, useLoad } from '../ui';

type Plan = components['schemas']['TrackingPlanView'];
type Group = components['schemas']['ViolationGroupView'];

/** The windows the tab offers, each read at the finest grain the API allows for it. */
const RANGES = [
  { id: '1h', label: '1 hour', ms: 3_600_000, granularity: 'minute' },
  { id: '24h', label: '24 hours', ms: 86_400_000, granularity: 'hour' },
  { id: '7d', label: '7 days', ms: 7 * 86_400_000, granularity: 'hour' },
  { id: '30d', label: '30 days', ms: 30 * 86_400_000, granularity: 'hour' },
] as const;
type RangeId = (typeof RANGES)[number]['id'];

/** A group's counts per bucket as bars, scaled to the largest bucket of all the groups. */
function Sparkline({ series, max }: { series: number[]; max: number }) {
  const width = 120;
  const height = 24;
  const step = width / Math.max(1, series.length);
  return (
    <svg
      class="sparkline"
      width={width}
      height={height}
      viewBox={`0 0 ${width} ${height}`}
      aria-hidden="true"
    >
      {series.map((count, i) =>
        count > 0 ? (
          <rect
            key={i}
            x={i * step}
            y={height - (count / max) * height}
            width={Math.max(1, step - 0.5)}
            height={(count / max) * height}
          />
        ) : null,
      )}
    </svg>
  );
}

const eventOf = (g: Group) => g.eventName ?? g.eventType ?? '';

/**
 * A plan's violations over time (GET /api/v1/tracking-plans/{id}/violations): the groups of
 * event, code and path with their totals and series, each with its newest samples.
 */
export function ViolationsTab({ plan }: { plan: Plan }) {
  const [rangeId, setRangeId] = useState<RangeId>('24h');
  const [open, setOpen] = useState<string | null>(null);
  const range = RANGES.find((r) => r.id === rangeId) ?? RANGES[1];
  const [loaded, reload] = useLoad(() => {
    const until = Date.now();
    return call(
      'read tracking plans',
      client.GET('/api/v1/tracking-plans/{planId}/violations', {
        params: {
          path: { planId: plan.id },
          query: {
            since: new Date(until - range.ms).toISOString(),
            until: new Date(until).toISOString(),
            granularity: range.granularity,
            samples: 3,
          },
        },
      }),
    );
  }, [plan.id, rangeId]);
  return (
    <section aria-labelledby="violations-heading">
      <h2 id="violations-heading">Violations</h2>
      <div class="violations-range" role="group" aria-label="Range">
        {RANGES.map((r) => (
          <button
            key={r.id}
            type="button"
            class="small"
            aria-pressed={r.id === rangeId}
            onClick={() => {
              setOpen(null);
              setRangeId(r.id);
            }}
          >
            {r.label}
          </button>
        ))}
        <button type="button" class="small" onClick={reload}>
          Refresh
        </button>
      </div>
      <Show loaded={loaded}>
        {({ data }) => {
          const peak = Math.max(1, ...data.groups.flatMap((g) => g.series));
          return (
            <>
              <p class="muted">
                {data.total} violations in the last {range.label}, by {data.granularity}, from{' '}
                <Time at={data.since} />.
                {data.overflow > 0
                  ? ` ${data.overflow} more of the account were past a bucket's cap of distinct keys and are in no group.`
                  : ''}
                {data.groupsLeftOff > 0 ? ` The ${data.groupsLeftOff} smallest groups are not shown.` : ''}
              </p>
              {data.groups.length === 0 ? (
                <p class="muted">No violations in this range.</p>
              ) : (
                <table class="violations stack">
                  <thead>
                    <tr>
                      <th scope="col">Event</th>
                      <th scope="col">Code</th>
                      <th scope="col">Path</th>
                      <th scope="col" class="total">
                        Total
                      </th>
                      <th scope="col">Over time</th>
                      <th scope="col">Samples</th>
                    </tr>
                  </thead>
                  <tbody>
                    {data.groups.map((g) => {
                      const id = `${g.eventType ?? ''}|${eventOf(g)}|${g.code ?? ''}|${g.path ?? ''}`;
                      return (
                        <Fragment key={id}>
                          <tr data-code={g.code} data-path={g.path}>
                            <td data-label="Event">{eventOf(g)}</td>
                            <td data-label="Code">
                              <code>{g.code}</code>
                            </td>
                            <td data-label="Path">
                              <code>{g.path || '(the event)'}</code>
                            </td>
                            <td class="total" data-label="Total">
                              {g.total}
                            </td>
                            <td data-label="Over time">
                              <Sparkline series={g.series} max={peak} />
                            </td>
                            <td>
                              {g.samples.length > 0 ? (
                                <button
                                  type="button"
                                  class="small"
                                  onClick={() => setOpen(open === id ? null : id)}
                                >
                                  {open === id ? 'Hide samples' : `Show samples (${g.samples.length})`}
                                </button>
                              ) : (
                                <span class="muted">none kept</span>
                              )}
                            </td>
                          </tr>
                          {open === id ? (
                            <tr class="samples">
                              <td colSpan={6}>
                                {g.samples.map((s, i) => (
                                  <div key={i} class="sample">
                                    <p>
                                      <Time at={s.receivedAt} /> · {s.message}
                                      {s.messageId ? (
                                        <>
                                          {' '}
                                          · <code>{s.messageId}</code>
                                        </>
                                      ) : null}
                                    </p>
                                    <Json
                                      value={s.event}
                                      label={`Sample ${i + 1} of ${g.code} at ${g.path}`}
                                    />
                                  </div>
                                ))}
                              </td>
                            </tr>
                          ) : null}
                        </Fragment>
                      );
                    })}
                  </tbody>
                </table>
              )}
            </>
          );
        }}
      </Show>
    </section>
  );
}
