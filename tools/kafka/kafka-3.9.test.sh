#!/usr/bin/env bash
# Kafka 3.9 keeps working: a 3.9.1 broker of its own (spare ports, a temporary state directory,
# never the 4.x one's) runs @pipeline/kafka's tests and the outbox's produce-and-consume round
# trips (ingestion's collect-hosted suite: POST /collect, then the committed events read back
# from the topic). Run by tools/test.sh; needs PostgreSQL and Redis like the suites do.
source "$(dirname "${BASH_SOURCE[0]}")/../lib/bootstrap.sh"
cd "$REPO"
ensure_pnpm

export KAFKA_VERSION="${COMPAT_KAFKA_VERSION:-3.9.1}"
export KAFKA_PORT="${COMPAT_KAFKA_PORT:-19192}" KAFKA_CONTROLLER_PORT="${COMPAT_KAFKA_CONTROLLER_PORT:-19193}"
KAFKA_STATE_DIR="$(mktemp -d "${TMPDIR:-/tmp}/kafka-$KAFKA_VERSION.XXXXXX")"
export KAFKA_STATE_DIR
export KAFKA_BROKERS="127.0.0.1:$KAFKA_PORT"
results="$(mktemp -d)"
cleanup() { bash tools/kafka/kafka.sh stop || true; rm -rf "$KAFKA_STATE_DIR" "$results"; }
trap cleanup EXIT

if port_open 127.0.0.1 "$KAFKA_PORT"; then
  log "port $KAFKA_PORT is taken: set COMPAT_KAFKA_PORT to a free one"
  exit 1
fi
bash tools/kafka/kafka.sh start

# The suites' own counts go to this step's report, not over the 4.x run's ones.
suite() { # project-dir results-name jest-args...
  local dir=$1 name=$2
  shift 2
  (cd "$dir" && TEST_REPORT_DIR= "$PNPM" exec jest --json --outputFile="$results/$name.json" "$@")
}
status=0
suite libs/kafka kafka || status=1
suite apps/ingestion outbox src/collect/collect-hosted.test.ts || status=1

counts="$(node -e '
  const fs = require("node:fs");
  let passed = 0, failed = 0, skipped = 0;
  for (const f of fs.readdirSync(process.argv[1])) {
    const r = JSON.parse(fs.readFileSync(`${process.argv[1]}/${f}`, "utf8"));
    passed += r.numPassedTests;
    failed += r.numFailedTests + r.numRuntimeErrorTestSuites;
    skipped += r.numPendingTests + r.numTodoTests;
  }
  console.log(JSON.stringify({ passed, failed, skipped }));
' "$results")"
log "against Kafka $KAFKA_VERSION: $counts"
if [[ -n "${TEST_REPORT_DIR:-}" ]]; then
  mkdir -p "$TEST_REPORT_DIR"
  node -e 'const c = JSON.parse(process.argv[1]); console.log(JSON.stringify({ project: `Kafka ${process.argv[2]} (kafka, outbox)`, ...c }))' \
    "$counts" "$KAFKA_VERSION" >"$TEST_REPORT_DIR/kafka-$KAFKA_VERSION.json"
fi
exit "$status"
