// Preloaded into a benchmarked service (`node -r tools/bench/process-probe.js dist/main.js`): on
// SIGUSR2 it writes one line to stdout, {"cpuMicros", "gcMicros"}, the process's CPU time
// (user + system) and the garbage collector's summed pause time. The benchmark reads them
// between runs, so that CPU per request is the service's own, not the load generator's or the
// broker's, and a heap setting's cost shows in its pause time.
let gcMicros = 0;
new (require('node:perf_hooks').PerformanceObserver)((list) => {
  for (const entry of list.getEntries()) gcMicros += entry.duration * 1000;
}).observe({ entryTypes: ['gc'] });

process.on('SIGUSR2', () => {
  const { user, system } = process.cpuUsage();
  process.stdout.write(`${JSON.stringify({ cpuMicros: user + system, gcMicros: Math.round(gcMicros) })}\n`);
});
