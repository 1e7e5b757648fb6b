// parseEventTime's cost per call (libs/events/src/event-time.ts): every event's timestamps are
// read at the door and again by each consumer. Prints nanoseconds per call on 1,002 texts
// (canonical ISO forms, an offset, a leap second), beside Date.parse of the same texts as a
// yardstick of what V8's own parser costs. Build first (pnpm nx run-many -t build).
//   node tools/bench/event-time.js [rounds=2000]
const path = require('node:path');
const { parseEventTime } = require(path.join(__dirname, '../../libs/events/dist/event-time.js'));

const rounds = Number(process.argv[2] ?? 2000);
const texts = Array.from({ length: 1000 }, (_, i) => new Date(1.7e12 + i * 7_919_113).toISOString());
texts.push('2026-01-31T12:00:00+14:00', '2016-12-31T23:59:60Z');

function nsPerCall(parse) {
  let sum = 0;
  const started = process.hrtime.bigint();
  for (let r = 0; r < rounds; r++) for (const text of texts) sum += parse(text) || 0; // Date.parse gives NaN for a leap second
  const ns = Number(process.hrtime.bigint() - started) / (rounds * texts.length);
  if (!(sum > 0)) throw new Error('nothing was parsed');
  return ns;
}

// Two passes each, alternating; the second pass of each is printed (JIT warmed).
const parsers = { parseEventTime, 'Date.parse': (text) => Date.parse(text) };
const results = {};
for (let pass = 0; pass < 2; pass++)
  for (const [name, parse] of Object.entries(parsers)) results[name] = nsPerCall(parse);
for (const [name, ns] of Object.entries(results))
  console.log(`${name.padEnd(16)} ${ns.toFixed(1)} ns per call`);
