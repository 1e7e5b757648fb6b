#!/usr/bin/env bash
# The test command's own PostgreSQL and Redis (tools/lib/throwaway-services.sh) are a fresh
# machine: a new cluster holding only PostgreSQL's default databases, with the settings the
# suites need, an empty Redis that keeps nothing, neither on the machine's usual ports, and a
# formed three-node Redis Cluster; stopping them leaves no process, port or data behind; a
# developer's DATABASE_URL, REDIS_URL and REDIS_CLUSTER_NODES_TEST start nothing. Run by tools/test.sh, beside (not on) the run's own servers.
source "$(dirname "${BASH_SOURCE[0]}")/bootstrap.sh"
cd "$REPO"

mkdir -p "$REPO/.cache"
TEST_SERVICES_DIR="$(mktemp -d "$REPO/.cache/throwaway-services-test.XXXXXX")"
chmod 755 "$TEST_SERVICES_DIR" # as .cache/test-services is: the postgres user reaches it
export TEST_SERVICES_DIR
source "$REPO/tools/lib/throwaway-services.sh"
trap 'stop_test_services; rm -rf "$TEST_SERVICES_DIR"' EXIT

source "$REPO/tools/lib/checks.sh"

unset DATABASE_URL WAREHOUSE_URL REDIS_URL REDIS_CLUSTER_NODES_TEST
started=$SECONDS
check "all start" start_test_services
# Under the state directory; or, when the postgres user cannot reach the checkout (root's home,
# a `mktemp -d` clone), in a directory of its own under $TMPDIR, as pg_state_dir documents.
cluster_dir_is_expected() {
  local recorded
  recorded="$(cat "$TEST_SERVICES_DIR/postgres.dir")"
  if [[ "$(id -u)" == 0 ]] && ! runuser -u postgres -- test -d "$TEST_SERVICES_DIR"; then
    [[ "$recorded" == "${TMPDIR:-/tmp}"/pipeline-throwaway-postgres.* && -d "$recorded" ]]
  else
    [[ "$recorded" == "$TEST_SERVICES_DIR/postgres" ]]
  fi
}
check "the cluster lives under the state directory, or under \$TMPDIR when postgres cannot reach it" cluster_dir_is_expected
log "started in $((SECONDS - started))s"
pg_port="$(node -p "new URL(process.argv[1]).port" "${DATABASE_URL:-postgres://x:1/pipeline}")"
redis_port="$(node -p "new URL(process.argv[1]).port" "${REDIS_URL:-redis://x:1}")"
IFS=, read -r -a cluster_nodes <<<"${REDIS_CLUSTER_NODES_TEST:-}"
cluster_ports=("${cluster_nodes[@]#127.0.0.1:}")
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

cluster_formed() {
  local port info
  [[ ${#cluster_ports[@]} == 3 && "$(printf '%s\n' "${cluster_ports[@]}" "$redis_port" 6379 | sort -u | wc -l)" == 5 ]] ||
    { echo "nodes: ${REDIS_CLUSTER_NODES_TEST:-}" >&2; return 1; }
  for port in "${cluster_ports[@]}"; do
    info="$(redis-cli -h 127.0.0.1 -p "$port" cluster info)"
    grep -q '^cluster_state:ok' <<<"$info" && grep -q '^cluster_slots_assigned:16384' <<<"$info" &&
      grep -q '^cluster_known_nodes:3' <<<"$info" && grep -q '^cluster_size:3' <<<"$info" ||
      { echo "127.0.0.1:$port: $info" >&2; return 1; }
  done
}
check "REDIS_CLUSTER_NODES_TEST names three new nodes of one cluster, every slot served (cluster_state:ok)" cluster_formed
cluster_spreads() {
  # Keys of different hash tags land on different nodes: -c follows the MOVED answers.
  local port=${cluster_ports[0]} tag owners=()
  for tag in a b c d e f g h i j; do
    redis-cli -c -h 127.0.0.1 -p "$port" set "{$tag}k" 1 >/dev/null || return 1
  done
  for port in "${cluster_ports[@]}"; do owners+=("$(redis-cli -h 127.0.0.1 -p "$port" dbsize)"); done
  [[ "$(printf '%s\n' "${owners[@]}" | grep -cv '^0$')" -ge 2 ]] || { echo "keys per node: ${owners[*]}" >&2; return 1; }
}
check "the cluster spreads keys over its nodes" cluster_spreads
check "the cluster's nodes keep no snapshots and no append-only file" \
  expect $'save\n\nappendonly\nno' bash -c "redis-cli -h 127.0.0.1 -p ${cluster_ports[1]:-1} config get save && redis-cli -h 127.0.0.1 -p ${cluster_ports[1]:-1} config get appendonly"

# A developer's own servers (here: the ones just started) are used as they are.
own() {
  local out
  out="$(
    DATABASE_URL="$DATABASE_URL" REDIS_URL="$REDIS_URL" WAREHOUSE_URL=
    REDIS_CLUSTER_NODES_TEST="$REDIS_CLUSTER_NODES_TEST"
    start_test_services 2>/dev/null
    echo "$PG_STARTED_HERE $REDIS_STARTED_HERE $REDIS_CLUSTER_STARTED_HERE $DATABASE_URL $WAREHOUSE_URL $REDIS_URL $REDIS_CLUSTER_NODES_TEST"
  )"
  [[ "$out" == "0 0 0 $DATABASE_URL postgres://postgres@127.0.0.1:$pg_port/warehouse $REDIS_URL $REDIS_CLUSTER_NODES_TEST" ]] ||
    { echo "got: $out" >&2; return 1; }
}
check "with DATABASE_URL, REDIS_URL and REDIS_CLUSTER_NODES_TEST set nothing is started, and WAREHOUSE_URL follows DATABASE_URL" own

pg_dir="$(cat "$TEST_SERVICES_DIR/postgres.dir")"
# Under set -e, as test.sh stops them: a cluster node removes its pid file as it shuts down.
check "stopping exits 0 under set -e" bash -c 'set -euo pipefail; source "$1"; REDIS_CLUSTER_STARTED_HERE=1 PG_STARTED_HERE=1 REDIS_STARTED_HERE=1 stop_test_services' _ "$REPO/tools/lib/throwaway-services.sh"
gone() {
  local port
  for port in "${cluster_ports[@]}"; do ! port_open 127.0.0.1 "$port" || return 1; done
  ! port_open 127.0.0.1 "$pg_port" && ! port_open 127.0.0.1 "$redis_port" &&
    [[ ! -e "$pg_dir" && ! -e "$TEST_SERVICES_DIR/redis" && ! -e "$TEST_SERVICES_DIR/redis-cluster" &&
      ! -e "$TEST_SERVICES_DIR/postgres.dir" ]]
}
check "stopping leaves no port open and no data" gone

end_checks throwaway-services "throwaway PostgreSQL, Redis and Redis Cluster"
