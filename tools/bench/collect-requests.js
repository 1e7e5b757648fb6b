// The load generator of the /collect benchmarks: autocannon posting batches of 20 track events,
// each request with fresh messageIds (so that dedupe never answers from its cache), over
// loopback to one server or spread over several. Shared by collect-load.js and capacity.js.
const { randomUUID } = require('node:crypto');
const autocannon = require('autocannon');

/** Events per request, the batch a browser library sends at most at once. */
const EVENTS_PER_REQUEST = 20;
/**
 * Distinct anonymous ids in a request (BENCH_VISITORS_PER_REQUEST, 20 unless told): 1 is a
 * browser's batch, one visitor's events (collect-load.js --regulations decides each distinct id once).
 */
const VISITORS = Number(process.env.BENCH_VISITORS_PER_REQUEST || EVENTS_PER_REQUEST);
/**
 * BENCH_FRESH_VISITORS=1: every request's visitors are new (anonymous ids never sent before), the
 * worst case for the door, which remembers the ids it saw; unless told, every request carries the
 * same visitors, as a site's returning browsers do batch after batch.
 */
const FRESH_VISITORS = process.env.BENCH_FRESH_VISITORS === '1';
/**
 * BENCH_EVENT_NAMES=<n>: the events are named `Event <k> Happened` for k cycling through n names
 * (the rules of collect-server.js's BENCH_TRACKING_PLAN), and every 10th event lacks `currency`
 * (a violation of those rules); unless told, every event is `Product Viewed`, all alike.
 */
const EVENT_NAMES = Number(process.env.BENCH_EVENT_NAMES || 0);
let sent = 0;

const eventNameOf = (n) => (EVENT_NAMES > 0 ? `Event ${n % EVENT_NAMES} Happened` : 'Product Viewed');
const propertiesOf = (n) =>
  EVENT_NAMES > 0 && n % 10 === 9
    ? { sku: 'SKU-1', price: 12.5 }
    : { sku: 'SKU-1', price: 12.5, currency: 'EUR' };

function collectBody() {
  const now = new Date().toISOString();
  const visitor = FRESH_VISITORS ? `anon-${randomUUID()}-` : 'anon-';
  const first = sent;
  sent += EVENTS_PER_REQUEST;
  const batch = Array.from({ length: EVENTS_PER_REQUEST }, (_, i) => ({
    type: 'track',
    event: eventNameOf(first + i),
    messageId: randomUUID(),
    anonymousId: `${visitor}${i % VISITORS}`,
    timestamp: now,
    properties: propertiesOf(first + i),
    context: {
      library: { name: 'bench', version: '1' },
      page: { url: 'https://shop.example/p', path: '/p' },
    },
  }));
  return JSON.stringify({ sentAt: now, batch });
}

/**
 * POSTs fresh batches to `urls` for `seconds` over `connections` connections: autocannon gives
 * connection i to urls[i % urls.length], so a multiple of urls.length gives each server the same
 * number. overallRate caps the requests per second of all of them. Resolves with autocannon's result.
 */
function loadCollect({ urls, connections, seconds, headers, overallRate }) {
  return new Promise((resolve, reject) => {
    autocannon(
      {
        url: urls.length === 1 ? urls[0] : urls,
        method: 'POST',
        connections,
        duration: seconds,
        ...(overallRate ? { overallRate } : {}),
        headers: { 'content-type': 'application/json', ...headers },
        requests: [{ setupRequest: (req) => ({ ...req, body: collectBody() }) }],
      },
      (error, result) => (error ? reject(error) : resolve(result)),
    );
  });
}

module.exports = { EVENTS_PER_REQUEST, collectBody, loadCollect };
