// CPU cost per request of ingestion's access log line and of its metrics, measured in-process
// (the end-to-end bench, collect-load.js, cannot resolve tens of microseconds on a busy machine).
// Needs the workspace built. Usage: node tools/bench/access-log-cost.js
const fs = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '../..');
const { createLogger, runWithRequestId } = require(path.join(root, 'libs/logger/dist'));
const { IngestionMetrics } = require(path.join(root, 'apps/ingestion/dist/metrics/ingestion-metrics'));

const logger = createLogger({ service: 'bench', stream: fs.createWriteStream('/dev/null'), level: 'info' });
const N = 100_000;
const fields = { method: 'POST', path: '/collect', status: 202, durationMs: 1.2 };

function time(name, fn) {
  for (let i = 0; i < 5000; i++) fn();
  const started = process.hrtime.bigint();
  for (let i = 0; i < N; i++) fn();
  console.log(`${name.padEnd(72)} ${(Number(process.hrtime.bigint() - started) / 1e3 / N).toFixed(2)} µs`);
}

const line = (level) => runWithRequestId('request-id', () => logger.log(level, 'request completed', fields));
time('access line at info (formatted, written to /dev/null)', () => line('info'));
time('access line at debug, level info, isLevelEnabled first (as logged now)', () => {
  if (logger.isLevelEnabled('debug')) line('debug');
});
time('access line at debug, level info, no check (winston formats, then drops)', () => line('debug'));
const metrics = new IngestionMetrics();
time('metrics of one published /collect request', () => {
  metrics.answered('/collect', 202);
  metrics.eventsAccepted(20);
  metrics.eventsRejected('invalid_event', 0);
  metrics.published(performance.now() - 5);
  metrics.writeKeyCache('hit');
});
