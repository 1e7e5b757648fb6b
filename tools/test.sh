#!/usr/bin/env bash
# Quick start, command two: installs everything and runs every check and test: formatting,
# lint, build (type-check and OpenAPI generation), the documentation checks (links, and the
# generated docs/configuration.md and docs/openapi.json being current), the shape of the commit
# messages (CONTRIBUTING.md), the unit and integration suites against a real Kafka broker
# (4.3.1; @pipeline/kafka and the outbox also against 3.9.1), PostgreSQL and Redis, the stack
# smoke test of tools/dev.sh, tools/dev.sh starting its own PostgreSQL and Redis where none
# answers, and README's "Your first event" run as printed. All on the Node of .node-version,
# which it checks.
#
# Every run is a fresh machine: it starts its own throwaway PostgreSQL 15 cluster, Redis and
# three-node Redis Cluster on free ports (tools/lib/throwaway-services.sh; data under
# .cache/test-services, wiped each run) and runs every step against them (DATABASE_URL,
# WAREHOUSE_URL, REDIS_URL, REDIS_CLUSTER_NODES_TEST), as it starts its own Kafka broker; all are
# stopped when the run ends, failed or interrupted. PostgreSQL and Redis need to be installed,
# not running (Debian's packages are installed when missing). Set DATABASE_URL (and
# WAREHOUSE_URL), REDIS_URL or REDIS_CLUSTER_NODES_TEST to run against servers of your own.
source "$(dirname "${BASH_SOURCE[0]}")/lib/bootstrap.sh"
source "$(dirname "${BASH_SOURCE[0]}")/lib/throwaway-services.sh"
cd "$REPO"

started=$SECONDS
# The run names its runtimes first, and stops at once on a Node other than .node-version's
# (bootstrap.sh put that one first on PATH; anything else means PATH was changed under it).
log "Node $(node -v) (.node-version $NODE_VERSION), Kafka $(bash tools/kafka/kafka.sh version) (and 3.9.1 in its own step)"
if [[ "$(node -v)" != "v$NODE_VERSION" ]]; then
  log "Node $(node -v) is not the declared $NODE_VERSION (.node-version)"
  exit 1
fi
install_dependencies
if [[ "$("$PNPM" exec node -v)" != "v$NODE_VERSION" ]]; then
  log "pnpm runs scripts on Node $("$PNPM" exec node -v), not the declared $NODE_VERSION"
  exit 1
fi
# Whatever this run started is stopped however it ends: the last step, a failure, Ctrl-C.
stop_started_services() {
  stop_kafka_if_started_here
  stop_test_services
}
trap stop_started_services EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
start_test_services
ensure_chromium
ensure_promtool
ensure_pgbouncer
start_kafka
if [[ "$KAFKA_STARTED_HERE" == 0 ]] && ! bash tools/kafka/kafka.sh owned; then
  log "the broker on ${KAFKA_PORT:-9092} was not started by tools/kafka/kafka.sh: its version is whatever it is, not necessarily $(bash tools/kafka/kafka.sh version)"
fi

export TEST_REPORT_DIR="$REPO/.reports/jest"
rm -rf "$REPO/.reports"
mkdir -p "$TEST_REPORT_DIR"

status=0
failed_steps=()
# Each step's output also goes to .reports/steps/<n>.log, so that the summary, which is what a
# CI log that keeps only its tail still shows, can repeat which checks of a failed step failed.
step_logs="$REPO/.reports/steps"
mkdir -p "$step_logs"
failed_logs=()
passed_logs=()
step() { # name, command...
  local name=$1; shift
  local out="$step_logs/$(( ${#failed_logs[@]} + ${#passed_logs[@]} + 1 )).log"
  log "$name"
  local rc=0
  "$@" 2>&1 | tee "$out" || rc=$? # pipefail: the command's status, tee's only if it alone failed
  if ((rc != 0)); then status=1; failed_steps+=("$name"); failed_logs+=("$out"); else passed_logs+=("$out"); fi
}
step "format check" "$PNPM" exec prettier --check . --log-level warn
step "kafka cluster id" bash tools/kafka/cluster-id.test.sh
step "throwaway PostgreSQL, Redis and Redis Cluster" bash tools/lib/throwaway-services.test.sh
step "lint and build" "$PNPM" exec nx run-many -t lint build --output-style=stream
step "docs and comments: no outside references, every link resolves" node tools/docs/check-docs.mjs
step "docs: docs/configuration.md matches the config schemas" node tools/docs/generate-config-reference.mjs --check
step "docs: docs/openapi.json matches what tsoa generates" node tools/docs/generate-openapi.mjs --check
step "commits: every message after efecdc5 is <area>: <what changed>, a blank line and a body" \
  sh -c 'node --test tools/commits/commit-message.test.mjs && node tools/commits/check-commit-messages.mjs'
step "mutation configs: breaks hold their scores, narrowing is explained, docs/testing.md's table is current" \
  sh -c 'node --test tools/mutation/scope-change.test.mjs tools/mutation/unchanged.test.mjs && node tools/mutation/check-configs.mjs && node tools/mutation/scope-report.mjs --check'
step "test summary: fails on a failed, skipped or todo test and on a missing report" node --test tools/test-report/summarize.test.mjs
step "tests" "$PNPM" exec nx run-many -t test --output-style=stream
step "kubernetes manifests" bash tools/deploy/validate-manifests.sh
step "monitoring: alert rules and dashboard" bash tools/monitoring/check-monitoring.sh
step "container image files" node tools/deploy/check-container-files.mjs
step "pruned production installs" bash tools/deploy/check-pruned-install.sh
step "stack smoke test" bash tools/stack-smoke.sh
# The stack smoke test ran tools/dev.sh as a user does, build included; the seven starts of the
# stack that follow skip nx's check of the build made two steps ago (20 s each on 2 cores).
step "README's first event, as printed" env DEV_SKIP_BUILD=1 bash tools/first-event.test.sh
step "dev stack restarts a crashed consumer" env DEV_SKIP_BUILD=1 bash tools/dev-restart.test.sh
step "dev stack starts its own PostgreSQL and Redis where none answers, and keeps their data" \
  env DEV_SKIP_BUILD=1 bash tools/dev-own-services.test.sh
step "every delivery kind starts at once on a fresh broker" bash tools/delivery-startup.test.sh
step "Kafka 3.9: @pipeline/kafka and the outbox against a 3.9.1 broker" bash tools/kafka/kafka-3.9.test.sh
# Mutation testing of the pure logic (docs/testing.md#mutation-testing): incremental, so only the
# mutants whose code or tests changed since the committed results run; `pnpm test:mutation --full`
# runs them all.
step "mutation testing (incremental): every module's security and data logic" "$PNPM" test:mutation

# Stopped before the summary, so the summary's closing line is the run's last line. A stop that
# goes wrong is told, and the summary still follows: the tests' verdict is what it is.
stop_started_services || log "stopping this run's Kafka, PostgreSQL or Redis went wrong (above)"
trap - EXIT
log "summary (took $((SECONDS - started))s)"
if (( ${#failed_steps[@]} > 0 )); then
  log "FAILED steps: ${failed_steps[*]}"
  for i in "${!failed_steps[@]}"; do
    log "what failed in \"${failed_steps[$i]}\" (full output: ${failed_logs[$i]#"$REPO/"}):"
    # jest heads a test's console output with "● Console": that is not a failure.
    grep -E 'FAILED|✕|● ' "${failed_logs[$i]}" | grep -v '● .*Console' | head -n 30 >&2 ||
      tail -n 15 "${failed_logs[$i]}" >&2
  done
fi
node tools/test-report/summarize.js "$TEST_REPORT_DIR" || status=1
exit "$status"
