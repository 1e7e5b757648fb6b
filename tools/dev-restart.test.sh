#!/usr/bin/env bash
# The dev stack outlives a crashed consumer: tools/dev.sh with a log consumer, on
# spare ports; the consumer is killed with SIGKILL and must come back while the control plane
# and ingestion keep answering 200. Also: a second start on the same ports is refused and says
# which stack runs; after the first stack was killed outright (only the broker left running),
# a new one starts. Run by tools/test.sh; reuses a running Kafka broker.
source "$(dirname "${BASH_SOURCE[0]}")/lib/bootstrap.sh"
cd "$REPO"

cp_port="${RESTART_TEST_CONTROL_PLANE_PORT:-14000}"
ing_port="${RESTART_TEST_INGESTION_PORT:-14001}"
delivery_port="${RESTART_TEST_DELIVERY_PORT:-14400}"
out="$REPO/.reports/dev-restart.log"
mkdir -p "$(dirname "$out")"
source "$REPO/tools/lib/checks.sh"
env_for_stack=(DEV_RESTART_CRASHED=1 DELIVERY_DESTINATIONS=log CONTROL_PLANE_PORT="$cp_port"
  INGESTION_PORT="$ing_port" DELIVERY_HTTP_PORT_BASE="$delivery_port" LOG_FORMAT=json)

start_stack() { # log file
  env "${env_for_stack[@]}" setsid bash tools/dev.sh >"$1" 2>&1 </dev/null &
  leader=$!
  for _ in $(seq 1 180); do
    if grep -q 'Stack is up' "$1" && grep -q '"message":"delivering"' "$1"; then return 0; fi
    kill -0 "$leader" 2>/dev/null || return 1
    sleep 1
  done
  return 1
}
# node, its image's flags (tools/deploy/node-flags.mjs), the script: not concurrently, whose
# command line holds every service's command.
consumer_pid() { pgrep -s "$leader" -f '^node( --[^ ]+)* apps/delivery/dist/main.js --destination log$' | head -n 1; }
healthy() { curl -fs -o /dev/null "http://127.0.0.1:$1/health"; }

check "the stack came up with restarts on" start_stack "$out"
first_leader=$leader

second_refused() {
  local second="$REPO/.reports/dev-restart-second.log" rc=0
  env "${env_for_stack[@]}" bash tools/dev.sh >"$second" 2>&1 </dev/null || rc=$?
  [[ "$rc" != 0 ]] && grep -q "a stack is already running: pid $first_leader" "$second" &&
    grep -q "control-plane:$cp_port,ingestion:$ing_port" "$second"
}
check "a second start on the same ports is refused, naming the running stack and its ports" second_refused

came_back() {
  local before after outage=0
  before="$(consumer_pid)"
  [[ -n "$before" ]] || return 1
  kill -KILL "$before"
  for _ in $(seq 1 120); do
    # The control plane and ingestion answer all along.
    healthy "$cp_port" && healthy "$ing_port" || outage=$((outage + 1))
    after="$(consumer_pid)"
    if [[ -n "$after" && "$after" != "$before" ]] && healthy "$delivery_port"; then
      ((outage == 0)) && grep -q '\[dev\] delivery-log crashed (exit code 137); restarting it in 1s' "$out"
      return
    fi
    sleep 0.25
  done
  return 1
}
check "a consumer killed with SIGKILL comes back while the control plane and ingestion stay 200" came_back

# Killed outright: the whole session at once, nothing shuts down; the broker (its own session)
# is left running, and the lock names a dead stack.
pkill -KILL -s "$leader" 2>/dev/null || true
for _ in $(seq 1 40); do kill -0 "$leader" 2>/dev/null || break; sleep 0.25; done
for _ in $(seq 1 40); do port_open 127.0.0.1 "$cp_port" || port_open 127.0.0.1 "$ing_port" || break; sleep 0.25; done
check "after the first stack was killed outright, a new one starts" start_stack "$REPO/.reports/dev-restart-again.log"

kill -INT -- "-$leader" 2>/dev/null || true
# The session's last processes may exit a moment after its leader: wait for both, bounded, and
# name what is left on failure.
stopped() {
  for _ in $(seq 1 120); do
    if ! kill -0 "$leader" 2>/dev/null && [[ -z "$(pgrep -s "$leader")" ]]; then return 0; fi
    sleep 0.5
  done
  log "left running in the stack's session:"
  pgrep -a -s "$leader" >&2 || true
  return 1
}
check "Ctrl-C stopped it, leaving nothing behind" stopped
pkill -KILL -s "$leader" 2>/dev/null || true

if ((failures > 0)); then
  log "stack output (last 40 lines of $out):"
  tail -n 40 "$out" >&2
fi
end_checks dev-restart "dev stack restarts (tools/dev.sh)"
