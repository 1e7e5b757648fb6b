#!/usr/bin/env bash
# Every delivery kind started at once on a fresh broker comes up (consumers racing to
# create and use the same topics, and the broker's own offsets topic, on an empty broker).
# Four rounds (STARTUP_TEST_ROUNDS), each on a new broker of its own (spare ports, a temporary
# state directory), so nothing is left over from the round before. Before the fix it guards
# (ensureTopics' bounded leaders check) no round of three came up; ten rounds cost the test
# command 167 s of its 15 minutes on 2 cores, four about 70. Run by tools/test.sh; needs the
# workspace built.
source "$(dirname "${BASH_SOURCE[0]}")/lib/bootstrap.sh"
cd "$REPO"

rounds="${STARTUP_TEST_ROUNDS:-4}"
broker_port="${STARTUP_TEST_KAFKA_PORT:-19092}"
controller_port="${STARTUP_TEST_KAFKA_CONTROLLER_PORT:-19093}"
http_base="${STARTUP_TEST_HTTP_PORT:-15400}"
# Every kind the app catalog has (needs libs/catalog built).
read -r -a kinds <<<"$(node -p "require('./libs/catalog/dist').deliveryKinds.join(' ')")"
out="$REPO/.reports/delivery-startup"
mkdir -p "$out"
source "$REPO/tools/lib/checks.sh"
broker() { KAFKA_STATE_DIR="$state" KAFKA_PORT="$broker_port" KAFKA_CONTROLLER_PORT="$controller_port" bash tools/kafka/kafka.sh "$@"; }

round() { # n
  local n=$1 pids=() i started=$SECONDS
  for i in "${!kinds[@]}"; do
    KAFKA_BROKERS="127.0.0.1:$broker_port" DELIVERY_HTTP_PORT=$((http_base + i)) DELIVERY_HTTP_HOST=127.0.0.1 \
      CONTROL_PLANE_URL=http://127.0.0.1:9 INTERNAL_SERVICE_TOKEN=startup-test-token-0123456789abcdef \
      LOG_FORMAT=json LOG_LEVEL=warn node apps/delivery/dist/main.js --destination "${kinds[$i]}" \
      >"$out/round-$n-${kinds[$i]}.log" 2>&1 &
    pids+=($!)
  done
  local up=0 ok
  for _ in $(seq 1 240); do
    ok=0
    for i in "${!kinds[@]}"; do
      kill -0 "${pids[$i]}" 2>/dev/null || { log "round $n: delivery ${kinds[$i]} exited during start; see $out/round-$n-${kinds[$i]}.log"; break 2; }
      # Silent: a consumer not yet listening is expected here, thousands of times a run.
      curl -fs -o /dev/null "http://127.0.0.1:$((http_base + i))/health" && ok=$((ok + 1))
    done
    if ((ok == ${#kinds[@]})); then up=1; break; fi
    sleep 0.25
  done
  kill -TERM "${pids[@]}" 2>/dev/null || true
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  ((up)) && log "round $n: all ${#kinds[@]} kinds up in $((SECONDS - started))s"
  ((up))
}

for n in $(seq 1 "$rounds"); do
  state="$(mktemp -d)"
  checks=$((checks + 1))
  if broker start >"$out/broker-$n.log" 2>&1 && round "$n"; then :; else failures=$((failures + 1)); log "FAILED: round $n"; fi
  broker stop >/dev/null 2>&1 || true
  rm -rf "$state"
done
log "$((checks - failures)) of $checks rounds came up"
end_checks delivery-startup "delivery start-up (fresh broker)"
