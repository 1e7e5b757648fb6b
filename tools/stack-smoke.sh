#!/usr/bin/env bash
# Checks Quick start command one end to end: tools/dev.sh brings the stack up, every service
# answers, one Ctrl-C stops it, and no process of it is left behind. Runs on spare ports so a
# developer's own stack is not disturbed; reuses a running Kafka broker.
source "$(dirname "${BASH_SOURCE[0]}")/lib/bootstrap.sh"
cd "$REPO"

cp_port="${SMOKE_CONTROL_PLANE_PORT:-13000}"
ing_port="${SMOKE_INGESTION_PORT:-13001}"
delivery_port="${SMOKE_DELIVERY_PORT:-13400}"
out="$REPO/.reports/stack-smoke.log"
mkdir -p "$(dirname "$out")"
source "$REPO/tools/lib/checks.sh"

started=$SECONDS
# Its own session and process group, as a terminal would give it: the group is what Ctrl-C
# signals, and the session is how leftovers are found afterwards.
# DEV_RESTART_CRASHED=0: here a crashed consumer must fail the check, not come back.
DEV_RESTART_CRASHED=0 CONTROL_PLANE_PORT=$cp_port INGESTION_PORT=$ing_port DELIVERY_HTTP_PORT_BASE=$delivery_port LOG_FORMAT=json setsid bash tools/dev.sh >"$out" 2>&1 </dev/null &
leader=$!

up=0
for _ in $(seq 1 180); do
  if grep -q 'Stack is up' "$out" && grep -q '"message":"delivering"' "$out"; then up=1; break; fi
  kill -0 "$leader" 2>/dev/null || break
  sleep 1
done
check "stack came up in $((SECONDS - started))s" test "$up" = 1
check "control plane /health answers 200" curl -fsS -o /dev/null "http://127.0.0.1:$cp_port/health"
check "ingestion /health answers 200" curl -fsS -o /dev/null "http://127.0.0.1:$ing_port/health"
check "migrations ran" grep -q 'migrations applied' "$out"

# The banner's first-key steps, as a new user follows them.
cli() { node apps/control-plane/dist/cli/main.js "$@"; }
field() { node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s)[process.argv[1]]))' "$1"; }
first_key() {
  local key status
  account="$(cli accounts create --name "Smoke $$" --json | field id)" || return 1
  key="$(cli api-keys create --account "$account" --scopes all --json | field apiKey)" || return 1
  write_key="$(cli write-keys create --account "$account" --name site --json | field writeKey)" || return 1
  [[ "$write_key" == wk_* ]] || return 1
  status="$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $key" -H 'Content-Type: application/json' \
    -d '{"appType":"stripe","displayName":"Smoke"}' "http://127.0.0.1:$cp_port/api/v1/apps")"
  [[ "$status" == 201 ]] || { echo "POST /api/v1/apps answered $status" >&2; return 1; }
}
check "the CLI issues a first API key and write key, and the key creates an app" first_key
# One event through the whole pipeline: ingestion commits it to Kafka, the log consumer reads it.
message_id="smoke-$$-$RANDOM"
collect_event() {
  local status
  status="$(curl -s -o /dev/null -w '%{http_code}' -H "X-Write-Key: $write_key" -H 'Content-Type: text/plain' \
    -d "{\"type\":\"track\",\"event\":\"Smoke\",\"messageId\":\"$message_id\",\"anonymousId\":\"a\",\"timestamp\":\"$(date -u +%Y-%m-%dT%H:%M:%SZ)\"}" \
    "http://127.0.0.1:$ing_port/collect")"
  [[ "$status" == 202 ]] || { echo "POST /collect answered $status" >&2; return 1; }
}
delivered() {
  for _ in $(seq 1 40); do grep -q "\"messageId\":\"$message_id\"" "$out" && return 0; sleep 0.25; done
  return 1
}
check "an event sent to /collect is acknowledged with 202" collect_event
in_warehouse() {
  local schema="account_${account//-/}" count
  for _ in $(seq 1 40); do
    count="$(psql "${WAREHOUSE_URL:-postgres://postgres@127.0.0.1:5432/warehouse}" -tAc \
      "SELECT count(*) FROM ${schema}.events WHERE message_id = '$message_id'" 2>/dev/null || true)"
    [[ "$count" == 1 ]] && return 0
    sleep 0.25
  done
  return 1
}
check "the delivery consumer reads that event from Kafka" delivered
check "the warehouse consumer loads it into the account's events table" in_warehouse
delivery_metrics() {
  # Read whole before grep: `grep -q` stops at the first match, and under pipefail the curl
  # it leaves writing fails the check ("Failed writing body") though the line is there.
  local metrics
  metrics="$(curl -fsS "http://127.0.0.1:$delivery_port/metrics")" &&
    grep -q 'pipeline_delivery_events_delivered_total{destination="warehouse"}' <<<"$metrics"
}
check "the warehouse consumer counts it on /metrics" delivery_metrics
check "the delivery consumers answer /health" curl -fsS -o /dev/null "http://127.0.0.1:$((delivery_port + 1))/health"
check "the API reference answers at /docs" curl -fsS -o /dev/null "http://127.0.0.1:$cp_port/docs/"
dead_letter_index() {
  # The control plane reads the delivery kinds' dead-letter topics: it was given the broker.
  for _ in $(seq 1 40); do grep -q '"message":"dead-letter index started"' "$out" && return 0; sleep 0.25; done
  return 1
}
check "the control plane's dead-letter index joined Kafka" dead_letter_index
sdk_served() {
  local body
  body="$(curl -fsS "http://127.0.0.1:$ing_port/v1/sdk.js")" && [[ "$body" == *pipeline-web-tracking* ]]
}
check "ingestion serves the built browser SDK at /v1/sdk.js" sdk_served

stop_started=$SECONDS
kill -INT -- "-$leader" 2>/dev/null || true
for _ in $(seq 1 60); do kill -0 "$leader" 2>/dev/null || break; sleep 0.5; done

# Live processes of the stack's session; an exited one awaiting its reaper (state Z) is gone.
leftovers() { ps -eo sid=,stat=,pid=,args= | awk -v sid="$leader" '$1 == sid && $2 !~ /^Z/'; }
stopped() { ! kill -0 "$leader" 2>/dev/null; }
nothing_left() { local left; left="$(leftovers)"; [[ -z "$left" ]] || { echo "$left" >&2; return 1; }; }
all_shut_down() {
  [[ "$(grep -c '"message":"shutdown complete"' "$out")" -ge 4 ]] &&
    [[ "$(grep -c 'exited with code 0$' "$out")" -ge 4 ]] && ! grep -q 'exited with code [1-9]' "$out"
}
ports_free() { ! port_open 127.0.0.1 "$cp_port" && ! port_open 127.0.0.1 "$ing_port" && ! port_open 127.0.0.1 "$delivery_port"; }

check "Ctrl-C stopped the stack in $((SECONDS - stop_started))s" stopped
check "no process of the stack is left" nothing_left
check "every service shut down gracefully and exited 0" all_shut_down
check "ports are free again" ports_free

if (( failures > 0 )); then
  pkill -KILL -s "$leader" 2>/dev/null || true
  log "stack output (last 60 lines of $out):"
  tail -n 60 "$out" >&2
fi
end_checks stack-smoke "stack-smoke (tools/dev.sh)"
