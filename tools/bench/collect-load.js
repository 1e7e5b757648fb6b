// Load benchmark of POST /collect: hosted mode vs a bare node:http baseline, batches
// of 20 events with unique messageIds, over loopback, each server in its own process; and
// Segment's POST /v1/batch with the same body, Basic auth, on the same server.
//   node tools/bench/collect-load.js [seconds=10] [connections=32]
// Prints events/s, p50 and p99 for each, the ratios, and p99 of hosted mode at 80% of its peak.
// Between the two, a `floor` server (the baseline plus one outbox record per request through the
// same publisher, acks -1; collect-server.js) shows what kafkajs alone costs on this machine.
//   node tools/bench/collect-load.js [seconds] [connections] --debugger [rounds=3]
// The live debugger's cost: two hosted servers, the recorder on (DEBUGGER_* as in
// production) and off (DEBUGGER_ENABLED=false), loaded in alternating runs; prints each run,
// the mean rates and CPU per request, and the ratio on/off.
//   node tools/bench/collect-load.js [seconds] [connections] --compare 'a:K=V,K=V' 'b:K=V' [rounds=3]
//   node tools/bench/collect-load.js [seconds] [connections] --regulations [rounds=3]
// The privacy check at the door: two hosted servers whose account has 100,000 suppressed
// subjects and none (the bench's control plane serves the record, BENCH_REGULATED_SUBJECTS,
// collect-server.js), loaded in alternating runs and once more each at 80% of the first's peak;
// prints the ratio of CPU per request (target <= 1.05). BENCH_VISITORS_PER_REQUEST=1 sends a
// browser's batch (one visitor's 20 events) instead of 20 visitors' events; BENCH_FRESH_VISITORS=1
// makes every request's visitors new, so the door remembers none of them (collect-requests.js).
//   node tools/bench/collect-load.js [seconds] [connections] --tracking-plan [rounds=3]
// The tracking-plan door: two hosted servers, one whose write key binds a plan of 50 track
// rules (BENCH_TRACKING_PLAN=50, collect-server.js) and one binding none, under the same load of
// events named after the plan's 50 rules, one in ten with a violation (BENCH_EVENT_NAMES=50,
// collect-requests.js); alternating runs and once more each at 80% of the first's peak; prints
// the ratio of CPU per request (target <= 1.15).
// Any two hosted servers the same way, each with its own environment: BENCH_ROOT=<worktree>
// runs another checkout's build (a lever's before and after), BENCH_COMPRESSION=lz4|gzip|none,
// BENCH_LOG_LEVEL=... (see collect-server.js).
// BENCH_KAFKA_LOG_DIR=<the broker's log.dirs> prints the bytes each hosted server's outbox
// topic takes on the broker (BENCH_COMPRESSION=lz4|gzip|none picks the records' codec).
// The hosted server starts with the Node flags of ingestion's image (tools/deploy/node-flags.mjs);
// BENCH_NODE_FLAGS='<flags>' replaces them, e.g. --compare 'image:' 'default:BENCH_NODE_FLAGS='.
// Every mode prints the peak RSS (VmHWM) of each server process. BENCH_CPU_PROF_DIR=<dir>
// writes a CPU profile of each server process there (node --cpu-prof) when it exits.
const { startCollectServer, stopProcess, peakRssKb } = require('./bench-processes');
const { EVENTS_PER_REQUEST: EVENTS, loadCollect } = require('./collect-requests');

// Positional arguments before `--debugger` (see above).
const flagAt = process.argv.findIndex((arg) =>
  ['--debugger', '--compare', '--floor', '--regulations', '--tracking-plan'].includes(arg),
);
const positional = process.argv.slice(2, flagAt >= 0 ? flagAt : undefined);
const seconds = Number(positional[0] ?? 10);
const connections = Number(positional[1] ?? 32);

async function startServer(mode, env = {}, label = mode) {
  const counts = { requests: 0 };
  const server = await startCollectServer(mode, env, (message) => {
    if ('topicBytes' in message) {
      const perEvent = message.topicBytes / Math.max(1, counts.requests * EVENTS);
      console.log(
        `outbox topic of ${label}: ${message.topicBytes} bytes in the broker's log, ${perEvent.toFixed(1)} bytes per event`,
      );
    }
  });
  return { ...server, counts };
}

async function run(server, overallRate, route = 'collect') {
  const before = await server.cpuMicros();
  const result = await load(server, overallRate, route);
  const after = await server.cpuMicros();
  result.cpuMicrosPerRequest = (after.cpuMicros - before.cpuMicros) / Math.max(1, result['2xx']);
  result.gcMicrosPerRequest = (after.gcMicros - before.gcMicros) / Math.max(1, result['2xx']);
  server.counts.requests += result['2xx'];
  return result;
}

/** The same body on both routes; each with its own way of presenting the write key. */
const routes = {
  collect: (server) => ({ path: '/collect', auth: { 'x-write-key': server.writeKey } }),
  segment: (server) => ({
    path: '/v1/batch',
    auth: { authorization: `Basic ${Buffer.from(`${server.writeKey}:`).toString('base64')}` },
  }),
};

function load(server, overallRate, route) {
  const { path: urlPath, auth } = routes[route](server);
  return loadCollect({
    urls: [`http://127.0.0.1:${server.port}${urlPath}`],
    connections,
    seconds,
    headers: auth,
    overallRate,
  });
}

const describe = (name, r) => {
  const ok = r['2xx'];
  const eps = (ok * EVENTS) / r.duration;
  console.log(
    `${name.padEnd(30)} ${String(Math.round(eps)).padStart(7)} events/s  ${String(Math.round(ok / r.duration)).padStart(5)} req/s  p50 ${r.latency.p50} ms  p99 ${r.latency.p99} ms  server CPU ${Math.round(r.cpuMicrosPerRequest)} µs/req (GC ${Math.round(r.gcMicrosPerRequest)})  non-2xx ${r.non2xx} errors ${r.errors}`,
  );
  return eps;
};

async function stop(name, server) {
  const kb = peakRssKb(server.pid);
  console.log(
    `peak RSS of ${name} (VmHWM): ${kb === null ? null : Math.round(kb / 1024)} MB (ingestion target < 300 MB)`,
  );
  await stopProcess(server.child);
  await new Promise((resolve) => setImmediate(resolve)); // its last lines read
}

/** `label:K=V,K=V` -> { label, env }. */
function variant(spec) {
  const at = spec.indexOf(':');
  const label = at < 0 ? spec : spec.slice(0, at);
  const env = {};
  for (const pair of (at < 0 ? '' : spec.slice(at + 1)).split(',').filter(Boolean)) {
    const eq = pair.indexOf('=');
    env[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  return { label, env };
}

/**
 * Two hosted servers loaded in alternating runs; prints each run, the means and the ratios a/b.
 * `equalRate`: then one more round each at the same offered rate, that share of a's mean peak
 * (each server's CPU per request at one rate: at its own peak the faster server also gets
 * fuller Kafka sends, which lowers its cost per request).
 */
async function compare(a, b, rounds, check, equalRate) {
  console.log(
    `POST /collect, ${a.label} vs ${b.label}, batches of ${EVENTS} events, ${connections} connections, ${seconds}s per run, ${rounds} rounds, node ${process.version}`,
  );
  const servers = {
    [a.label]: await startServer(a.mode ?? 'hosted', a.env, a.label),
    [b.label]: await startServer(b.mode ?? 'hosted', b.env, b.label),
  };
  check?.(servers[a.label], servers[b.label]);
  for (const label of [a.label, b.label]) await run(servers[label]); // warm-up of both
  const totals = { [a.label]: { eps: 0, cpu: 0, gc: 0 }, [b.label]: { eps: 0, cpu: 0, gc: 0 } };
  for (let round = 1; round <= rounds; round++) {
    // Alternating which goes first: drift of the machine weighs on both alike.
    const order = round % 2 === 1 ? [a.label, b.label] : [b.label, a.label];
    for (const label of order) {
      const result = await run(servers[label]);
      totals[label].eps += describe(`round ${round} ${label}`, result);
      totals[label].cpu += result.cpuMicrosPerRequest;
      totals[label].gc += result.gcMicrosPerRequest;
    }
  }
  const mean = (label) => ({
    eps: totals[label].eps / rounds,
    cpu: totals[label].cpu / rounds,
    gc: totals[label].gc / rounds,
  });
  const m = { a: mean(a.label), b: mean(b.label) };
  const equal = {};
  if (equalRate) {
    const rate = Math.max(1, Math.round((equalRate * m.a.eps) / EVENTS));
    for (const label of [a.label, b.label])
      equal[label] = await run(servers[label], rate).then((result) => {
        describe(`${label} at ${rate} req/s`, result);
        return result;
      });
  }
  for (const label of [a.label, b.label]) await stop(label, servers[label]);
  console.log(
    `mean ${a.label}: ${Math.round(m.a.eps)} events/s, ${Math.round(m.a.cpu)} µs/req (GC ${Math.round(m.a.gc)}); ${b.label}: ${Math.round(m.b.eps)} events/s, ${Math.round(m.b.cpu)} µs/req (GC ${Math.round(m.b.gc)})`,
  );
  console.log(
    `ratio ${a.label}/${b.label}: rate ${(m.a.eps / m.b.eps).toFixed(3)}, server CPU per request ${(m.a.cpu / m.b.cpu).toFixed(3)}`,
  );
  if (equalRate) {
    const [ea, eb] = [equal[a.label], equal[b.label]];
    console.log(
      `at ${Math.round(equalRate * 100)}% of ${a.label}'s peak, both: server CPU per request ${a.label}/${b.label} ${(ea.cpuMicrosPerRequest / eb.cpuMicrosPerRequest).toFixed(3)}; p99 ${ea.latency.p99} ms and ${eb.latency.p99} ms`,
    );
  }
}

const debuggerCost = (rounds) =>
  compare(
    { label: 'recorder on', env: { DEBUGGER_ENABLED: 'true' } },
    { label: 'recorder off', env: { DEBUGGER_ENABLED: 'false' } },
    rounds,
    (on, off) => {
      if (!on.debugger || off.debugger) throw new Error('the build has no debugger recorder');
    },
  ).then(() => console.log('(target for the recorder: rate ratio on/off >= 0.95)'));

/** The hosted service against its floor in alternating runs: the targets of docs/performance.md. */
const againstFloor = (rounds) =>
  compare(
    { label: 'hosted', env: {} },
    { label: 'floor', mode: 'floor', env: {} },
    rounds,
    undefined,
    0.8,
  ).then(() =>
    console.log(
      "(targets: rate hosted/floor >= 0.8, server CPU per request hosted/floor <= 1.25, hosted's p99 at 80% of its peak < 50 ms)",
    ),
  );

/** The door's regulation check with 100,000 suppressed subjects in the account, against none. */
const regulationCost = (rounds) =>
  compare(
    { label: '100,000 suppressed', env: { BENCH_REGULATED_SUBJECTS: '100000' } },
    { label: 'none suppressed', env: { BENCH_REGULATED_SUBJECTS: '0' } },
    rounds,
    undefined,
    0.8,
  ).then(() => console.log('(target: server CPU per request 100,000/none <= 1.05)'));

/** The door's tracking-plan check with a 50-rule plan bound, against none; the same events. */
function trackingPlanCost(rounds) {
  // Read by the load generator in this process: both servers get the plan's event names.
  process.env.BENCH_EVENT_NAMES = '50';
  return compare(
    { label: '50-event plan', env: { BENCH_TRACKING_PLAN: '50' } },
    { label: 'no plan', env: {} },
    rounds,
    undefined,
    0.8,
  ).then(() => console.log('(target: server CPU per request plan/none <= 1.15)'));
}

async function main() {
  const planFlag = process.argv.indexOf('--tracking-plan');
  if (planFlag >= 0) return trackingPlanCost(Number(process.argv[planFlag + 1] ?? 3) || 3);
  const regulationsFlag = process.argv.indexOf('--regulations');
  if (regulationsFlag >= 0) return regulationCost(Number(process.argv[regulationsFlag + 1] ?? 3) || 3);
  const floorFlag = process.argv.indexOf('--floor');
  if (floorFlag >= 0) return againstFloor(Number(process.argv[floorFlag + 1] ?? 3) || 3);
  const flag = process.argv.indexOf('--debugger');
  if (flag >= 0) return debuggerCost(Number(process.argv[flag + 1] ?? 3) || 3);
  const compared = process.argv.indexOf('--compare');
  if (compared >= 0) {
    const [a, b, rounds] = process.argv.slice(compared + 1);
    if (!a || !b)
      throw new Error("--compare needs two variants, e.g. 'before:BENCH_ROOT=../before' 'after:'");
    return compare(variant(a), variant(b), Number(rounds ?? 3) || 3);
  }
  console.log(
    `POST /collect, batches of ${EVENTS} events, ${connections} connections, ${seconds}s per run, node ${process.version}`,
  );
  const base = await startServer('baseline');
  await run(base); // warm-up, as the hosted server's
  const baselineRun = await run(base);
  const baselineEps = describe('baseline (node:http + JSON)', baselineRun);
  await stop('the baseline', base);

  const floor = await startServer('floor');
  await run(floor);
  const floorRun = await run(floor);
  describe('floor (baseline + kafkajs send)', floorRun);
  await stop('the floor server', floor);

  const hosted = await startServer('hosted');
  await run({ ...hosted }, undefined).then(() => undefined); // warm-up: JIT, connections, caches
  const peak = await run(hosted);
  const hostedEps = describe('hosted /collect (acks=-1)', peak);
  const hostedCpu = peak.cpuMicrosPerRequest;
  const rate = Math.max(1, Math.round((0.8 * peak['2xx']) / peak.duration));
  describe(`hosted at 80% of peak (${rate} req/s)`, await run(hosted, rate));
  const segmentEps = describe('hosted /v1/batch (Segment API)', await run(hosted, undefined, 'segment'));
  // /collect again after /v1/batch: the two are compared on an equally warm server.
  const againEps = describe('hosted /collect, again', await run(hosted));
  await stop('the hosted service', hosted);
  console.log(`ratio hosted/baseline: ${(hostedEps / baselineEps).toFixed(2)} (target >= 0.35, stretch 0.5)`);
  console.log(
    `server CPU per request hosted/baseline: ${(hostedCpu / baselineRun.cpuMicrosPerRequest).toFixed(2)} (target <= 3)`,
  );
  console.log(
    `server CPU per request floor/baseline: ${(floorRun.cpuMicrosPerRequest / baselineRun.cpuMicrosPerRequest).toFixed(2)}, hosted/floor: ${(hostedCpu / floorRun.cpuMicrosPerRequest).toFixed(2)}; rate floor/baseline: ${((floorRun['2xx'] * EVENTS) / floorRun.duration / baselineEps).toFixed(2)}`,
  );
  const collectEps = (hostedEps + againEps) / 2;
  console.log(
    `ratio /v1/batch to /collect (mean of the two /collect runs): ${(segmentEps / collectEps).toFixed(2)} (target within 0.90-1.10)`,
  );
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
