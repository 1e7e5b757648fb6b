#!/usr/bin/env bash
# Quick start, command two: installs everything and runs every check and test: formatting,
# lint, build (type-check and OpenAPI generation), the unit and integration suites against a
# real Kafka broker, PostgreSQL and Redis, and the stack smoke test of tools/dev.sh.
source "$(dirname "${BASH_SOURCE[0]}")/lib/bootstrap.sh"
cd "$REPO"

started=$SECONDS
install_dependencies
require_services
ensure_chromium
start_kafka
trap stop_kafka_if_started_here EXIT

export TEST_REPORT_DIR="$REPO/.reports/jest"
rm -rf "$REPO/.reports"
mkdir -p "$TEST_REPORT_DIR"

status=0
failed_steps=()
step() { # name, command...
  local name=$1; shift
  log "$name"
  "$@" || { status=1; failed_steps+=("$name"); }
}
step "format check" "$PNPM" exec prettier --check . --log-level warn
step "kafka cluster id" bash tools/kafka/cluster-id.test.sh
step "lint and build" "$PNPM" exec nx run-many -t lint build --output-style=stream
step "tests" "$PNPM" exec nx run-many -t test --output-style=stream
step "kubernetes manifests" bash tools/deploy/validate-manifests.sh
step "container image files" node tools/deploy/check-container-files.mjs
step "pruned production installs" bash tools/deploy/check-pruned-install.sh
step "stack smoke test" bash tools/stack-smoke.sh
step "dev stack restarts a crashed consumer" bash tools/dev-restart.test.sh
step "every delivery kind starts at once on a fresh broker" bash tools/delivery-startup.test.sh

# Stopped before the summary, so the summary's closing line is the run's last line.
stop_kafka_if_started_here
trap - EXIT
log "summary (took $((SECONDS - started))s)"
if (( ${#failed_steps[@]} > 0 )); then log "FAILED steps: ${failed_steps[*]}"; fi
node tools/test-report/summarize.js "$TEST_REPORT_DIR" || status=1
exit "$status"
