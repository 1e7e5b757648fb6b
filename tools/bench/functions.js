// What running a tenant function costs per event (libs/functions, docs/decisions/0002-function-sandbox.md),
// on every runtime the built dist exports (QuickJS in WebAssembly in this process; isolated-vm in
// a child process), against the no-function baseline: a structured clone of the batch, which a
// consumer does anyway. Three functions (identity; a 10-line mapping: rename, copy and mask
// properties, add a context field; a regex-heavy one masking emails and phone numbers in every
// string property), batches of 1, 10, 100 and 500 realistic track events (about 600 bytes of JSON
// each), each cell run warm for about `seconds`.
// CPU counted: this process's (process.cpuUsage) plus, for a runtime with child processes (its
// `pids`), the children's user + system time from /proc/<pid>/stat (clock ticks of 10 ms: each
// cell runs long enough for that to be under 1 %). Wall is the time until `run` resolves.
// Printed per cell: µs of CPU per event (consumer, child, total), the CPU added over the
// baseline, wall µs per event and events per CPU second. Build first
// (pnpm nx run-many -t build -p @pipeline/functions).
//   node --no-node-snapshot tools/bench/functions.js [seconds=1.5] [--runtime=quickjs,quickjs-handles,isolated-vm] [--batch=1,10,100,500]
const fs = require('node:fs');
const path = require('node:path');

const functions = require(path.join(__dirname, '../../libs/functions/dist'));

const flags = process.argv.slice(2).filter((a) => a.startsWith('--'));
const args = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const seconds = Number(args[0] ?? 1.5);
const flag = (name, fallback) =>
  (flags.find((f) => f.startsWith(`--${name}=`)) ?? `--${name}=${fallback}`).split('=')[1];
const batches = flag('batch', '1,10,100,500').split(',').map(Number);

const available = {
  quickjs: functions.createQuickJsRuntime && (() => functions.createQuickJsRuntime({ input: 'json' })),
  'quickjs-handles':
    functions.createQuickJsRuntime && (() => functions.createQuickJsRuntime({ input: 'handles' })),
  'isolated-vm':
    functions.createIsolatedVmRuntime && (() => functions.createIsolatedVmRuntime({ processes: 1 })),
};
const runtimeNames = flag('runtime', Object.keys(available).join(',')).split(',');
for (const name of runtimeNames)
  if (!(name in available))
    throw new Error(`--runtime takes ${Object.keys(available).join(', ')}, not ${name}`);

const code = {
  identity: 'export function transform(event) { return event; }',
  mapping: `export function transform(event, ctx) {
  if (event.event === 'Order Completed') event.event = 'Purchase';
  const p = event.properties;
  p.revenue = p.total;
  p.email = typeof p.email === 'string' ? p.email.replace(/^[^@]+/, '***') : p.email;
  delete p.coupon;
  event.context.destination = ctx.destination;
  event.context.traits = { plan: event.context.traits?.plan ?? 'free' };
  return event;
}`,
  regex: `const email = /[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\\.[A-Za-z]{2,}/g;
const phone = /\\+?\\d[\\d\\s().-]{7,}\\d/g;
const card = /\\b(?:\\d[ -]?){13,16}\\b/g;
const mask = (value) => {
  if (typeof value === 'string') return value.replace(email, '[email]').replace(phone, '[phone]').replace(card, '[card]');
  if (Array.isArray(value)) return value.map(mask);
  if (value !== null && typeof value === 'object') {
    const out = {};
    for (const key of Object.keys(value)) out[key] = mask(value[key]);
    return out;
  }
  return value;
};
export function transform(event) { return mask(event); }`,
};

const trackEvent = (n) => ({
  type: 'track',
  event: 'Order Completed',
  messageId: `msg-${n}-3f6c2b8e-4a1d-4f3e-9a7b-0c1d2e3f4a5b`,
  anonymousId: `anon-${n % 977}`,
  userId: `user-${n % 311}`,
  timestamp: '2026-11-30T01:02:03.456Z',
  properties: {
    orderId: `order-${n}`,
    total: 42.5 + (n % 10),
    currency: 'EUR',
    coupon: 'WINTER10',
    email: `jane.doe+${n}@example.com`,
    phone: '+33 6 12 34 56 78',
    products: [
      { sku: 'sku-1', name: 'Wool socks', price: 12.5, quantity: 2 },
      { sku: 'sku-2', name: 'Scarf', price: 17.5, quantity: 1 },
    ],
  },
  context: {
    ip: '203.0.113.7',
    locale: 'fr-FR',
    userAgent: 'Mozilla/5.0 (Macintosh; Intel Mac OS X 14_0) AppleWebKit/605.1.15 Safari/605.1.15',
    page: { path: '/checkout', url: 'https://shop.example.com/checkout?step=3' },
    library: { name: 'analytics.js', version: '5.2.0' },
    traits: { plan: 'pro' },
  },
});
const sample = JSON.stringify(trackEvent(1));
const ctx = { kind: 'destination', destination: 'amplitude', integrationId: 'int-1', writeKeyId: 'wk-1' };

const clockTicks = 100;
const childMicros = (pids) => {
  let total = 0;
  for (const pid of pids) {
    if (pid === undefined) continue;
    try {
      // Fields after the command's closing parenthesis: utime is the 12th, stime the 13th.
      const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      total += ((Number(fields[11]) + Number(fields[12])) * 1e6) / clockTicks;
    } catch {
      // The child exited: its CPU is lost to this count, which the output would show as a drop.
    }
  }
  return total;
};
const cpuNow = () => {
  const usage = process.cpuUsage();
  return usage.user + usage.system;
};

/** Runs `once` (a whole batch) warm for about `seconds`; CPU and wall per event. */
async function measure(size, once, pids) {
  for (let i = 0; i < 3; i++) await once();
  let events = 0;
  let failed = 0;
  const cpu0 = cpuNow();
  const child0 = childMicros(pids());
  const wall0 = performance.now();
  while (performance.now() - wall0 < seconds * 1000) {
    const run = await once();
    if (run?.outcome === 'failed') failed += 1;
    events += size;
  }
  const wall = (performance.now() - wall0) * 1000;
  const consumer = cpuNow() - cpu0;
  const child = childMicros(pids()) - child0;
  return { consumer: consumer / events, child: child / events, wall: wall / events, failed };
}

const fmt = (n, digits = 1) => (Number.isFinite(n) ? n.toFixed(digits) : '-');
const rows = [];
const print = (row) => {
  rows.push(row);
  console.log(
    [
      row.runtime.padEnd(16),
      row.fn.padEnd(9),
      String(row.batch).padStart(5),
      fmt(row.consumer).padStart(9),
      fmt(row.child).padStart(8),
      fmt(row.total).padStart(8),
      fmt(row.added).padStart(8),
      fmt(row.wall).padStart(8),
      Math.round(1e6 / row.total)
        .toLocaleString('en')
        .padStart(10),
      row.failed ? `(${row.failed} failed runs)` : '',
    ].join(' '),
  );
};

(async () => {
  console.log(`event: ${sample.length} bytes of JSON; ${seconds} s per cell; node ${process.version}`);
  console.log(
    `${'runtime'.padEnd(16)} ${'function'.padEnd(9)} ${'batch'.padStart(5)} ${'cpu µs/ev'.padStart(9)} ${'child'.padStart(8)} ${'total'.padStart(8)} ${'added'.padStart(8)} ${'wall µs'.padStart(8)} ${'ev/cpu-s'.padStart(10)}`,
  );
  const baseline = new Map();
  for (const size of batches) {
    const batch = Array.from({ length: size }, (_, i) => trackEvent(i));
    const cost = await measure(
      size,
      async () => structuredClone(batch),
      () => [],
    );
    baseline.set(size, cost.consumer);
    print({ runtime: 'baseline (clone)', fn: '-', batch: size, ...cost, total: cost.consumer, added: 0 });
  }
  for (const runtimeName of runtimeNames) {
    const make = available[runtimeName];
    if (!make) {
      console.log(`${runtimeName}: not exported by the built libs/functions`);
      continue;
    }
    const runtime = make();
    const pids = () => runtime.pids ?? [];
    try {
      for (const [fnName, source] of Object.entries(code)) {
        if (runtimeName === 'quickjs-handles' && fnName === 'regex') continue;
        const fn = { versionId: `bench-${fnName}`, code: source };
        for (const size of batches) {
          const batch = Array.from({ length: size }, (_, i) => trackEvent(i));
          const check = await runtime.run(fn, batch, ctx);
          if (check.outcome !== 'completed' || check.results.some((r) => r.result !== 'ok'))
            throw new Error(`${runtimeName} ${fnName}: ${JSON.stringify(check).slice(0, 300)}`);
          // The consumer hands the runtime its own copy: the clone is part of what it costs.
          const cost = await measure(size, async () => runtime.run(fn, structuredClone(batch), ctx), pids);
          const total = cost.consumer + cost.child;
          print({
            runtime: runtimeName,
            fn: fnName,
            batch: size,
            ...cost,
            total,
            added: total - baseline.get(size),
          });
        }
      }
    } finally {
      // Bounded: after a long run isolated-vm's close was seen never to resolve, and with nothing
      // else pending Node then exits without a word, before the summary below.
      let timer;
      await Promise.race([runtime.close(), new Promise((resolve) => (timer = setTimeout(resolve, 5000)))]);
      clearTimeout(timer);
    }
  }
  const target = rows.filter((r) => r.fn === 'mapping' && r.batch === 100);
  for (const row of target)
    console.log(
      `target (10-line function at batch 100 adds ≤ 10 µs CPU per event): ${row.runtime} adds ${fmt(row.added)} µs: ${row.added <= 10 ? 'met' : 'NOT met'}`,
    );
  process.exit(0);
})().catch((error) => {
  console.error(error);
  process.exit(1);
});
