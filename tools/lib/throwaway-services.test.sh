#!/usr/bin/env bash
# The test command's own PostgreSQL and Redis (tools/lib/throwaway-services.sh) are a fresh
# machine: a new cluster holding only PostgreSQL's default databases, with the settings the
# suites need, and an empty Redis that keeps nothing, neither on the machine's usual ports;
# stopping them leaves no process, port or data behind; a developer's DATABASE_URL and
# REDIS_URL start nothing. Run by tools/test.sh, beside (not on) the run's own servers.
source "$(dirname "${BASH_SOURCE[0]}")/bootstrap.sh"
cd "$REPO"

mkdir -p "$REPO/.cache"
TEST_SERVICES_DIR="$(mktemp -d "$REPO/.cache/throwaway-services-test.XXXXXX")"
chmod 755 "$TEST_SERVICES_DIR" # as .cache/test-services is: the postgres user reaches it
export TEST_SERVICES_DIR
source "$REPO/tools/lib/throwaway-services.sh"
trap 'stop_test_services; rm -rf "$TEST_SERVICES_DIR"' EXIT

failures=0
checks=0
check() { # description, command...
  local what=$1
  shift
  checks=$((checks + 1))
  if "$@"; then log "ok: $what"; else log "FAILED: $what"; failures=$((failures + 1)); fi
}

unset DATABASE_URL WAREHOUSE_URL REDIS_URL
started=$SECONDS
check "both start" start_test_services
check "the cluster lives under the state directory" grep -qxF "$TEST_SERVICES_DIR/postgres" "$TEST_SERVICES_DIR/postgres.dir"
log "started in $((SECONDS - started))s"
pg_port="$(node -p "new URL(process.argv[1]).port" "${DATABASE_URL:-postgres://x:1/pipeline}")"
redis_port="$(node -p "new URL(process.argv[1]).port" "${REDIS_URL:-redis://x:1}")"
psql_bin="$(pg_bindir)/psql"
sql() { "$psql_bin" "postgres://postgres@127.0.0.1:$pg_port/postgres" -XtAc "$1"; }
expect() { # expected, command...: the command prints exactly the expected text
  local want=$1 got
  shift
  got="$("$@" 2>&1)" || true
  [[ "$got" == "$want" ]] || { echo "expected [$want], got [$got]" >&2; return 1; }
}

check "the URLs name the new servers, on ports other than 5432 and 6379" \
  test "$DATABASE_URL" = "postgres://postgres@127.0.0.1:$pg_port/pipeline" -a \
  "${WAREHOUSE_URL:-}" = "postgres://postgres@127.0.0.1:$pg_port/warehouse" -a \
  "$REDIS_URL" = "redis://127.0.0.1:$redis_port" -a "$pg_port" != 5432 -a "$redis_port" != 6379
check "PostgreSQL 15 holds only its default databases (no warehouse, no pipeline)" \
  expect $'postgres\ntemplate0\ntemplate1' sql "SELECT datname FROM pg_database ORDER BY 1"
check "user postgres, trust, over TCP" expect postgres sql "SELECT current_user"
check "server version 15" expect 15 sql "SELECT current_setting('server_version_num')::int / 10000"
check "max_connections $TEST_PG_MAX_CONNECTIONS, shared_buffers 64MB, fsync off, autovacuum off" \
  expect "$TEST_PG_MAX_CONNECTIONS|64MB|off|off" \
  sql "SELECT concat_ws('|', current_setting('max_connections'), current_setting('shared_buffers'), current_setting('fsync'), current_setting('autovacuum'))"
check "Redis is empty" expect 0 redis-cli -h 127.0.0.1 -p "$redis_port" dbsize
check "Redis keeps no snapshots and no append-only file" \
  expect $'save\n\nappendonly\nno' bash -c "redis-cli -h 127.0.0.1 -p $redis_port config get save && redis-cli -h 127.0.0.1 -p $redis_port config get appendonly"

# A developer's own servers (here: the ones just started) are used as they are.
own() {
  local out
  out="$(
    DATABASE_URL="$DATABASE_URL" REDIS_URL="$REDIS_URL" WAREHOUSE_URL=
    start_test_services 2>/dev/null
    echo "$PG_STARTED_HERE $REDIS_STARTED_HERE $DATABASE_URL $WAREHOUSE_URL $REDIS_URL"
  )"
  [[ "$out" == "0 0 $DATABASE_URL postgres://postgres@127.0.0.1:$pg_port/warehouse $REDIS_URL" ]] ||
    { echo "got: $out" >&2; return 1; }
}
check "with DATABASE_URL and REDIS_URL set nothing is started, and WAREHOUSE_URL follows DATABASE_URL" own

pg_dir="$(cat "$TEST_SERVICES_DIR/postgres.dir")"
stop_test_services
gone() {
  ! port_open 127.0.0.1 "$pg_port" && ! port_open 127.0.0.1 "$redis_port" &&
    [[ ! -e "$pg_dir" && ! -e "$TEST_SERVICES_DIR/redis" && ! -e "$TEST_SERVICES_DIR/postgres.dir" ]]
}
check "stopping leaves no port open and no data" gone

mkdir -p "$REPO/.reports/jest"
echo "{\"project\":\"throwaway PostgreSQL and Redis\",\"passed\":$((checks - failures)),\"failed\":$failures,\"skipped\":0}" \
  >"$REPO/.reports/jest/throwaway-services.json"
exit $((failures > 0))
