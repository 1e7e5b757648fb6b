// Top self-time entries of a V8 CPU profile (node --cpu-prof; collect-load.js writes one per
// hosted process with BENCH_CPU_PROF_DIR), grouped by function and package.
//   node tools/bench/cpu-profile-top.js <file.cpuprofile> [entries=25]
const fs = require('node:fs');

const [file, count = '25'] = process.argv.slice(2);
if (!file) throw new Error('usage: cpu-profile-top.js <file.cpuprofile> [entries]');
const profile = JSON.parse(fs.readFileSync(file, 'utf8'));
const byId = new Map(profile.nodes.map((node) => [node.id, node]));
const selfMicros = new Map();
// timeDeltas[i] is the time before samples[i]: attributed to that sample's node.
profile.samples.forEach((id, i) =>
  selfMicros.set(id, (selfMicros.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)),
);

/** `function (package or file:line)`: node_modules paths shortened to the package. */
function nameOf(node) {
  const { functionName, url, lineNumber } = node.callFrame;
  const inModules = /node_modules\/(?:\.pnpm\/[^/]+\/node_modules\/)?((?:@[^/]+\/)?[^/]+)\/(.*)$/.exec(url);
  const where = inModules
    ? `${inModules[1]}/${inModules[2]}`
    : url.replace(/^file:\/\//, '').replace(/^.*\/(apps|libs)\//, '$1/');
  return `${functionName || '(anonymous)'} ${where ? `${where}:${lineNumber + 1}` : ''}`.trim();
}

const totals = new Map();
let all = 0;
for (const [id, micros] of selfMicros) {
  const name = nameOf(byId.get(id));
  totals.set(name, (totals.get(name) ?? 0) + micros);
  all += micros;
}
const idle = [...totals].filter(([name]) => name.startsWith('(idle)')).reduce((s, [, v]) => s + v, 0);
const busy = all - idle;
console.log(
  `${file}: ${(busy / 1e6).toFixed(1)} s busy of ${(all / 1e6).toFixed(1)} s sampled; share of busy time:`,
);
for (const [name, micros] of [...totals]
  .filter(([n]) => !n.startsWith('(idle)'))
  .sort((a, b) => b[1] - a[1])
  .slice(0, Number(count))) {
  console.log(`${((100 * micros) / busy).toFixed(1).padStart(5)}%  ${name}`);
}
