#!/usr/bin/env bash
# tools/dev.sh on a machine where PostgreSQL and Redis are installed but none answers: with
# DEV_POSTGRES_PORT and DEV_REDIS_PORT on free ports (nothing answers there, as nothing does on
# 5432 and 6379 of a fresh machine) and a DEV_SERVICES_DIR of its own, the stack says it started
# its own servers there, comes up, and an event sent to ingestion lands in the warehouse. A second
# stack on other ports (as the smoke tests run beside a developer's) uses the same servers, which
# outlive the first stack's Ctrl-C and stop with the second's, their data left in place. Started
# again, the stack finds the account, the event and a Redis key of the first run. The machine's own
# servers are never used (DATABASE_URL, WAREHOUSE_URL and REDIS_URL are unset for the stacks).
# Run by tools/test.sh; reuses a running Kafka broker. Every wait is bounded.
source "$(dirname "${BASH_SOURCE[0]}")/lib/bootstrap.sh"
cd "$REPO"

mkdir -p "$REPO/.cache"
DEV_SERVICES_DIR="$(mktemp -d "$REPO/.cache/dev-own-services-test.XXXXXX")"
chmod 755 "$DEV_SERVICES_DIR" # as .cache/dev-services is: the postgres user reaches it
export DEV_SERVICES_DIR
source "$REPO/tools/lib/dev-services.sh"
source "$REPO/tools/lib/checks.sh"
leaders=() # the stacks started, each the leader of its own session
# Ctrl-C, as a terminal sends it to the stack's process group; true once its session is empty.
stop_stack() { # leader
  kill -INT -- "-$1" 2>/dev/null || true
  until_true 60 session_gone "$1"
}
session_gone() { ! kill -0 "$1" 2>/dev/null && [[ -z "$(pgrep -s "$1")" ]]; }
stop_all() {
  local leader
  for leader in "${leaders[@]}"; do
    stop_stack "$leader" || pkill -KILL -s "$leader" 2>/dev/null || true
  done
  # What a failed check left running, and the data: this test's own, in its own directory.
  stop_postgres_cluster "$DEV_SERVICES_DIR" throwaway
  stop_redis_server "$DEV_SERVICES_DIR" throwaway
  rm -rf "$DEV_SERVICES_DIR"
}
trap stop_all EXIT

DEV_POSTGRES_PORT="$(free_port)"
DEV_REDIS_PORT="$(free_port)"
while [[ "$DEV_REDIS_PORT" == "$DEV_POSTGRES_PORT" ]]; do DEV_REDIS_PORT="$(free_port)"; done
export DEV_POSTGRES_PORT DEV_REDIS_PORT
pg_port=$DEV_POSTGRES_PORT
redis_port=$DEV_REDIS_PORT
cp_port="${OWN_SERVICES_TEST_CONTROL_PLANE_PORT:-15000}"
ing_port="${OWN_SERVICES_TEST_INGESTION_PORT:-15001}"
delivery_port="${OWN_SERVICES_TEST_DELIVERY_PORT:-15400}"
work="$REPO/.reports/dev-own-services"
rm -rf "$work"
mkdir -p "$work"

start_stack() { # log file, control plane port, ingestion port, delivery port base, destinations
  env -u DATABASE_URL -u WAREHOUSE_URL -u REDIS_URL DEV_RESTART_CRASHED=0 LOG_FORMAT=json \
    CONTROL_PLANE_PORT="$2" INGESTION_PORT="$3" DELIVERY_HTTP_PORT_BASE="$4" DELIVERY_DESTINATIONS="$5" \
    setsid bash tools/dev.sh >"$1" 2>&1 </dev/null &
  leader=$!
  leaders+=("$leader")
}
stack_up() { # log file, leader
  grep -q 'Stack is up' "$1" && grep -q '"message":"delivering"' "$1" && return 0
  kill -0 "$2" 2>/dev/null || return 2
  return 1
}

psql_bin="$(pg_bindir)/psql"
sql() { "$psql_bin" "postgres://postgres@127.0.0.1:$pg_port/$1" -XtAc "$2"; }
redis() { redis-cli -h 127.0.0.1 -p "$redis_port" "$@"; }
says() { # log file, texts...: each text is in the log
  local text
  for text in "${@:2}"; do grep -qF -- "$text" "$1" || { echo "not in $1: $text" >&2; return 1; }; done
}
pg_data_dir() { cat "$DEV_SERVICES_DIR/postgres.dir"; }

ports_unused() {
  [[ "$pg_port" != 5432 && "$redis_port" != 6379 ]] && ! port_open 127.0.0.1 "$pg_port" && ! port_open 127.0.0.1 "$redis_port"
}
check "neither port is the machine's 5432 or 6379, and nothing answers on either" ports_unused
account=
write_key=

started=$SECONDS
first="$work/first.log"
start_stack "$first" "$cp_port" "$ing_port" "$delivery_port" warehouse
first_leader=$leader
check "the stack came up" until_true 180 stack_up "$first" "$first_leader"
if ((failures > 0)); then # nothing else can pass; say why at once
  log "stack output (last 40 lines of $first):"
  tail -n 40 "$first" >&2
  end_checks dev-own-services "dev stack's own PostgreSQL and Redis (tools/dev.sh)"
fi
log "stack up after $((SECONDS - started))s"
check "it says it started its own PostgreSQL, and where its data is" \
  says "$first" "no PostgreSQL answered on 127.0.0.1:$pg_port: started one of its own, data in $(shown "$(pg_data_dir)")"
check "it says it started its own Redis, and where its data is" \
  says "$first" "no Redis answered on 127.0.0.1:$redis_port: started one of its own, data in $(shown "$DEV_SERVICES_DIR/redis")"
check "the banner names both, as started by tools/dev.sh" says "$first" \
  "postgres        postgres://postgres@127.0.0.1:$pg_port/pipeline   (started by tools/dev.sh, data kept in $(shown "$(pg_data_dir)"))" \
  "redis           redis://127.0.0.1:$redis_port   (started by tools/dev.sh, data kept in $(shown "$DEV_SERVICES_DIR/redis"))"
check "PostgreSQL 15 answers there" test "$(sql postgres "SELECT current_setting('server_version_num')::int / 10000")" = 15
check "Redis answers there" test "$(redis ping)" = PONG

# An account and its write key, as README's first step makes them, on the stack's database.
cli() { DATABASE_URL="postgres://postgres@127.0.0.1:$pg_port/pipeline" node apps/control-plane/dist/cli/main.js "$@"; }
field() { node -p "JSON.parse(require('fs').readFileSync(0, 'utf8')).$1"; }
first_keys() {
  account="$(cli accounts create --name "Own services $$" --json | field id)" &&
    write_key="$(cli write-keys create --account "$account" --name site --json | field writeKey)" && [[ "$write_key" == wk_* ]]
}
check "the CLI makes an account and a write key in the stack's own PostgreSQL" first_keys
message_id="own-services-$$-$RANDOM"
collect_event() {
  local status
  status="$(curl -s -o "$work/collect.out" -w '%{http_code}' -H "X-Write-Key: ${write_key:-}" -H 'Content-Type: application/json' \
    -d "{\"type\":\"track\",\"event\":\"Own Services\",\"messageId\":\"$message_id\",\"anonymousId\":\"a\",\"timestamp\":\"$(date -u +%Y-%m-%dT%H:%M:%SZ)\"}" \
    "http://127.0.0.1:$ing_port/collect")"
  [[ "$status" == 202 ]] || { echo "POST /collect answered $status: $(cat "$work/collect.out")" >&2; return 1; }
}
check "an event sent to /collect is acknowledged with 202" collect_event
in_warehouse() {
  [[ "$(sql warehouse "SELECT count(*) FROM account_${account//-/}.events WHERE message_id = '$message_id'" 2>/dev/null)" == 1 ]]
}
check "the warehouse consumer loads it into the account's events table, in the stack's own PostgreSQL" until_true 30 in_warehouse
marker="written $(date -u +%FT%TZ)"
check "a key written to the stack's own Redis" test "$(redis set dev-own-services-test "$marker")" = OK

second="$work/second.log"
start_stack "$second" "$((cp_port + 100))" "$((ing_port + 100))" "$((delivery_port + 100))" log
second_leader=$leader
check "a second stack on other ports came up beside it" until_true 180 stack_up "$second" "$second_leader"
check "the second stack says it uses the same PostgreSQL and Redis, started for the first" says "$second" \
  "PostgreSQL on 127.0.0.1:$pg_port is the dev stack's own (data in $(shown "$(pg_data_dir)")), started for the stack(s) pid $first_leader: using it too" \
  "Redis on 127.0.0.1:$redis_port is the dev stack's own (data in $(shown "$DEV_SERVICES_DIR/redis")), started for the stack(s) pid $first_leader: using it too"

check "Ctrl-C stopped the first stack" stop_stack "$first_leader"
check "the first stack left its PostgreSQL and Redis running for the second" says "$first" \
  "left its own PostgreSQL running for the stack(s) pid $second_leader" "left its own Redis running for the stack(s) pid $second_leader"
check "they still answer" test "$(sql postgres 'SELECT 1')" = 1 -a "$(redis ping)" = PONG
check "the second stack still answers" curl -fsS -o /dev/null "http://127.0.0.1:$((cp_port + 100))/health"

check "Ctrl-C stopped the second stack" stop_stack "$second_leader"
check "the second stack, the last using them, stopped both" says "$second" \
  "stopped its own PostgreSQL (data kept in $(shown "$(pg_data_dir)"))" \
  "stopped its own Redis (data kept in $(shown "$DEV_SERVICES_DIR/redis"))"
servers_stopped() {
  ! port_open 127.0.0.1 "$pg_port" && ! port_open 127.0.0.1 "$redis_port" &&
    ! postgres_cluster_port "$DEV_SERVICES_DIR" >/dev/null && ! redis_pid "$DEV_SERVICES_DIR" >/dev/null
}
check "no PostgreSQL or Redis of theirs runs, and their ports are free" servers_stopped
data_kept() {
  [[ -f "$(pg_data_dir)/data/PG_VERSION" && -d "$DEV_SERVICES_DIR/redis/appendonlydir" &&
    -z "$(ls -A "$DEV_SERVICES_DIR/users")" ]]
}
check "their data is still in place, and no stack is registered as using them" data_kept

third="$work/third.log"
start_stack "$third" "$cp_port" "$ing_port" "$delivery_port" warehouse
check "started again, the stack came up" until_true 180 stack_up "$third" "$leader"
check "it started its own PostgreSQL and Redis again, on the same data" says "$third" \
  "no PostgreSQL answered on 127.0.0.1:$pg_port: started one of its own, data in $(shown "$(pg_data_dir)")" \
  "no Redis answered on 127.0.0.1:$redis_port: started one of its own, data in $(shown "$DEV_SERVICES_DIR/redis")"
check "the first run's account is there" test "$(sql pipeline "SELECT count(*) FROM accounts WHERE id = '${account:-}'")" = 1
check "the first run's event is in the warehouse" in_warehouse
check "the first run's Redis key is there" test "$(redis get dev-own-services-test)" = "$marker"
check "Ctrl-C stopped it, and its PostgreSQL and Redis" stop_stack "$leader"
check "no PostgreSQL or Redis of it runs, and their ports are free" servers_stopped

log "took $((SECONDS - started))s"
if ((failures > 0)); then
  for f in "$first" "$second" "$third"; do
    [[ -f "$f" ]] && { log "stack output (last 30 lines of $f):"; tail -n 30 "$f" >&2; }
  done
fi
end_checks dev-own-services "dev stack's own PostgreSQL and Redis (tools/dev.sh)"
