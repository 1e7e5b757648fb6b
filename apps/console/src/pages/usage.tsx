import { useEffect, useRef, useState } from 'preact/hooks';
import uPlot from 'uplot';
import { call, client } from '../api';
import type { DailyUsage } from '../types';
import { Show, useLoad } from '../ui';

const SERIES: { key: keyof DailyUsage; label: string; stroke: string }[] = [
  { key: 'totalCostUsd', label: 'Total', stroke: '#1f2937' },
  { key: 'storageCostUsd', label: 'Storage', stroke: '#2563eb' },
  { key: 'queryCostUsd', label: 'Queries', stroke: '#059669' },
  { key: 'syncRowsCostUsd', label: 'Synced rows', stroke: '#d97706' },
  { key: 'computeCostUsd', label: 'Compute', stroke: '#9333ea' },
];

/** GET /api/v1/usage/daily as a chart of the daily cost by part. */
export function Usage() {
  const [days, setDays] = useState(30);
  const [loaded] = useLoad(
    () =>
      call('read usage', client.GET('/api/v1/usage/daily', { params: { query: { days: String(days) } } })),
    [days],
  );
  return (
    <>
      <h1>Usage</h1>
      <div class="fields">
        <label>
          Days
          <select value={String(days)} onChange={(e) => setDays(Number(e.currentTarget.value))}>
            {[7, 30, 90].map((d) => (
              <option key={d} value={String(d)}>
                last {d} days
              </option>
            ))}
          </select>
        </label>
      </div>
      <Show loaded={loaded}>{({ data }) => <UsageChart days={data} />}</Show>
    </>
  );
}

function UsageChart({ days }: { days: DailyUsage[] }) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const element = box.current;
    if (!element) return;
    const sorted = [...days].sort((a, b) => a.date.localeCompare(b.date));
    const data: uPlot.AlignedData = [
      sorted.map((d) => Date.parse(`${d.date}T00:00:00Z`) / 1000),
      ...SERIES.map((s) => sorted.map((d) => Number(d[s.key] ?? 0))),
    ];
    const width = () => Math.max(320, element.clientWidth);
    const plot = new uPlot(
      {
        width: width(),
        height: 320,
        tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
        series: [
          {
            label: 'Day',
            value: (_u, v) => (v == null ? '' : new Date(v * 1000).toISOString().slice(0, 10)),
          },
          ...SERIES.map((s) => ({
            label: s.label,
            stroke: s.stroke,
            width: s.key === 'totalCostUsd' ? 2.5 : 1.5,
            points: { show: true, size: 5 },
            value: (_u: uPlot, v: number | null) => (v == null ? '' : `$${v.toFixed(4)}`),
          })),
        ],
        axes: [{}, { label: 'USD per day', values: (_u, ticks) => ticks.map((t) => `$${t}`), size: 70 }],
      },
      data,
      element,
    );
    const resize = () => plot.setSize({ width: width(), height: 320 });
    window.addEventListener('resize', resize);
    return () => {
      window.removeEventListener('resize', resize);
      plot.destroy();
    };
  }, [days]);
  const total = days.reduce((sum, d) => sum + Number(d.totalCostUsd ?? 0), 0);
  const rows = days.reduce((sum, d) => sum + Number(d.syncRowsTotal ?? 0), 0);
  // ISO 8601 strings of one format compare in time order.
  const asOf = days.reduce<string | null>(
    (last, d) => (d.meteredAt && (!last || d.meteredAt > last) ? d.meteredAt : last),
    null,
  );
  return (
    <figure class="chart">
      <div ref={box} class="chart-box" />
      <figcaption>
        Daily cost by part over {days.length} days: ${total.toFixed(2)} in all, {rows.toLocaleString()} rows
        synced.{' '}
        {asOf
          ? `As of ${asOf.slice(0, 16).replace('T', ' ')} UTC (usage is metered periodically).`
          : 'Not metered yet.'}
      </figcaption>
    </figure>
  );
}
