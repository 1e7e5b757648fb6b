// What validating an event against a tracking plan costs (libs/tracking-plans): a 50-event plan
// (each track rule six properties: a pattern, bounds, an enum, a nested object; three required;
// closed to unplanned properties) plus a common schema, compiled once; then events of random
// rules, valid ones and ones with one or two violations each, validated one call at a time.
// Prints the compile time and microseconds per event (p50, p99, max) for each kind, and what
// compiling lazily costs instead (compilePlan's `lazy`, as ingestion's door compiles): the
// plan's checks at once, then each rule's first event (p50, max over the 50). Build first
// (pnpm nx run-many -t build -p @pipeline/tracking-plans).
//   node tools/bench/tracking-plan-validation.js [events=20000]
const path = require('node:path');
const { checkPlan, compilePlan } = require(path.join(__dirname, '../../libs/tracking-plans/dist'));

const count = Number(process.argv[2] ?? 20_000);
const events = Array.from({ length: 50 }, (_, i) => `Event ${i} Happened`);
const rule = (name) => ({
  type: 'track',
  name,
  schema: {
    type: 'object',
    required: ['properties'],
    properties: {
      properties: {
        type: 'object',
        additionalProperties: false,
        required: ['id', 'amount', 'currency'],
        properties: {
          id: { type: 'string', pattern: '^[a-z]{2}-[0-9]{1,8}$' },
          amount: { type: 'number', minimum: 0, maximum: 1e9 },
          currency: { enum: ['USD', 'EUR', 'GBP', 'JPY'] },
          coupon: { type: ['string', 'null'], maxLength: 40 },
          gift: { type: 'boolean' },
          product: {
            type: 'object',
            required: ['sku'],
            properties: { sku: { type: 'string', minLength: 1 }, quantity: { type: 'integer', minimum: 1 } },
          },
        },
      },
    },
  },
});
const plan = {
  common: {
    type: 'object',
    properties: { context: { type: 'object', properties: { app: { type: 'object' } } } },
  },
  rules: events.map(rule),
};

let started = process.hrtime.bigint();
const check = checkPlan(plan);
const checkMs = Number(process.hrtime.bigint() - started) / 1e6;
if (!check.ok) throw new Error(JSON.stringify(check.problems));
started = process.hrtime.bigint();
const validator = compilePlan(check.plan, { planId: 'bench', version: 1 });
const compileMs = Number(process.hrtime.bigint() - started) / 1e6;
started = process.hrtime.bigint();
const lazy = compilePlan(check.plan, { planId: 'bench', version: 1 }, { lazy: true });
const lazyMs = Number(process.hrtime.bigint() - started) / 1e6;

const base = (i) => ({
  type: 'track',
  event: events[i % events.length],
  messageId: `m-${i}`,
  anonymousId: 'a-1',
  timestamp: '2026-01-31T12:00:00.000Z',
  context: { app: { name: 'bench' }, library: { name: 'analytics.js', version: '1.0.0' } },
  properties: {
    id: `ab-${i % 1e8}`,
    amount: i % 1000,
    currency: 'EUR',
    coupon: null,
    gift: false,
    product: { sku: 'SKU-1', quantity: 2 },
  },
});
const kinds = {
  valid: (i) => base(i),
  invalid: (i) => {
    const e = base(i);
    // One or two violations: a wrong type, a missing required, a value out of range, an unplanned property.
    if (i % 4 === 0) e.properties.amount = 'ten';
    if (i % 4 === 1) delete e.properties.currency;
    if (i % 4 === 2) e.properties.id = 'not an id';
    if (i % 4 === 3) e.properties.discount = 5;
    if (i % 3 === 0) e.properties.product = {};
    return e;
  },
  unplanned: (i) => ({ ...base(i), event: `Unknown ${i % 7}` }),
};

function measure(make) {
  const samples = new Float64Array(count);
  let violations = 0;
  const inputs = Array.from({ length: count }, (_, i) => make(i));
  for (let i = 0; i < count; i++) {
    const t = process.hrtime.bigint();
    violations += validator.validate(inputs[i]).length;
    samples[i] = Number(process.hrtime.bigint() - t) / 1e3;
  }
  samples.sort();
  const at = (q) => samples[Math.min(count - 1, Math.floor(q * count))];
  return { p50: at(0.5), p99: at(0.99), max: samples[count - 1], violationsPerEvent: violations / count };
}

console.log(
  `plan: ${plan.rules.length} rules; checkPlan ${checkMs.toFixed(1)} ms, compilePlan ${compileMs.toFixed(1)} ms`,
);
{
  // Each rule's first event through the lazy plan: that rule's compile (and, for the very
  // first, the common schema's and the dialect's engine) plus the validation.
  const firsts = events.map((_, i) => {
    const t = process.hrtime.bigint();
    lazy.validate(base(i));
    return Number(process.hrtime.bigint() - t) / 1e6;
  });
  const sorted = [...firsts].sort((a, b) => a - b);
  console.log(
    `lazy: compilePlan ${lazyMs.toFixed(1)} ms, then the first event of each rule p50 ${sorted[25].toFixed(2)} ms, max ${sorted[49].toFixed(2)} ms (the first: ${firsts[0].toFixed(2)} ms), ${firsts.reduce((a, b) => a + b, 0).toFixed(0)} ms in all`,
  );
}
// A warm-up pass of each kind first (JIT), then the measured pass.
for (const make of Object.values(kinds)) measure(make);
for (const [kind, make] of Object.entries(kinds)) {
  const r = measure(make);
  console.log(
    `${kind.padEnd(10)} p50 ${r.p50.toFixed(1)} µs  p99 ${r.p99.toFixed(1)} µs  max ${r.max.toFixed(1)} µs  ` +
      `(${r.violationsPerEvent.toFixed(2)} violations per event, ${count} events)`,
  );
}
