#!/usr/bin/env bash
# The flakiness check (docs/testing.md): runs the timing-sensitive test suites N times each
# (default 10) while stress-ng keeps every core busy, as a loaded 2-core CI machine would, and
# prints how often each suite passed. A suite that passes only sometimes races the clock: fix
# the test (wait for a condition, inject the clock, prove "nothing more" with a marker), never
# the count.
#
#   tools/flaky.sh [N] [suite ...]     e.g. tools/flaky.sh 10, or tools/flaky.sh 3 shutdown task-runs
#
# Suites: shutdown, limits, availability, task-runs, consumer-runner, sync-process,
# task-worker-process, delivery-process. Needs PostgreSQL, Redis and a Kafka broker as the
# tests do (KAFKA_BROKERS, default 127.0.0.1:9092); installs Debian's stress-ng when missing.
# Each failed run's output is kept in .reports/flaky/<suite>-<run>.log. Exits 1 when any run
# failed.
source "$(dirname "${BASH_SOURCE[0]}")/lib/bootstrap.sh"

runs="${1:-10}"
[[ "$runs" =~ ^[1-9][0-9]*$ ]] || { log "N must be a positive number of runs, not '$runs'"; exit 2; }
shift $(($# > 0 ? 1 : 0))

# name -> project directory and test files (paths inside the project).
declare -A suites=(
  [shutdown]="libs/lifecycle src/shutdown.test.ts src/probes.test.ts"
  [limits]="apps/ingestion src/limits/limits.test.ts"
  [availability]="apps/ingestion src/collect/availability.test.ts"
  [task-runs]="apps/control-plane src/tasks/task-runs.test.ts"
  [consumer-runner]="libs/destinations src/consumer-runner.test.ts"
  [sync-process]="apps/control-plane src/sources/sync-process.test.ts"
  [task-worker-process]="apps/control-plane src/tasks/task-worker-process.test.ts"
  [delivery-process]="apps/delivery src/delivery-process.test.ts"
)
order=(shutdown limits availability task-runs consumer-runner sync-process task-worker-process delivery-process)
if (($# > 0)); then
  for name in "$@"; do [[ -n "${suites[$name]:-}" ]] || { log "unknown suite '$name' (one of: ${order[*]})"; exit 2; }; done
  order=("$@")
fi

ensure_pnpm
require_services
ensure_debian_package /usr/bin/stress-ng stress-ng "to keep every core busy during the runs"
export KAFKA_BROKERS="${KAFKA_BROKERS:-127.0.0.1:9092}"
"$REPO/tools/kafka/kafka.sh" status >/dev/null || { log "no Kafka broker on $KAFKA_BROKERS: tools/kafka/kafka.sh start"; exit 1; }

# The process tests start the built services.
log "building the projects the suites start"
(cd "$REPO" && "$PNPM" exec nx run-many -t build --projects=@pipeline/control-plane,@pipeline/delivery >/dev/null)

reports="$REPO/.reports/flaky"
mkdir -p "$reports"
cores="$(nproc)"
stress-ng --cpu "$cores" --cpu-method matrixprod --quiet &
stress_pid=$!
trap 'kill "$stress_pid" 2>/dev/null; wait "$stress_pid" 2>/dev/null' EXIT
log "stress-ng is keeping $cores cores busy (pid $stress_pid); $runs runs of: ${order[*]}"

declare -A passed failed
for name in "${order[@]}"; do
  read -r project files <<<"${suites[$name]}"
  passed[$name]=0 failed[$name]=0
  for ((run = 1; run <= runs; run++)); do
    out="$reports/$name-$run.log"
    # shellcheck disable=SC2086 # files is a list
    if (cd "$REPO/$project" && "$PNPM" exec jest --ci $files) >"$out" 2>&1; then
      passed[$name]=$((passed[$name] + 1))
      rm -f "$out"
    else
      failed[$name]=$((failed[$name] + 1))
      log "$name: run $run failed (output in ${out#"$REPO"/})"
    fi
  done
  log "$name: ${passed[$name]} passed, ${failed[$name]} failed"
done

printf '\n%-22s %6s %6s\n' suite passed failed
any_failed=0
for name in "${order[@]}"; do
  printf '%-22s %6d %6d\n' "$name" "${passed[$name]}" "${failed[$name]}"
  ((failed[$name] == 0)) || any_failed=1
done
exit "$any_failed"
