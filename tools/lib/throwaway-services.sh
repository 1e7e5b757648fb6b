#!/usr/bin/env bash
# Throwaway PostgreSQL, Redis and a Redis Cluster for one test run, so that every run of
# tools/test.sh starts from a fresh machine: nothing a previous run, another step or a
# developer left in the machine's own servers (a `warehouse` database, keys) can make a test
# pass or fail.
#
#   bash tools/lib/throwaway-services.sh start   start them; prints the `export` lines to eval
#   bash tools/lib/throwaway-services.sh stop    stop them and delete their data
#   bash tools/lib/throwaway-services.sh env     print the `export` lines of the running ones
#
# e.g.  eval "$(bash tools/lib/throwaway-services.sh start)" && pnpm exec jest ...
#
# PostgreSQL is a new cluster of the installed PostgreSQL 15 (`initdb` + `pg_ctl`; Debian's
# `postgresql` package is installed when missing), trust authentication, user `postgres`, on a
# free port of 127.0.0.1; Redis is `redis-server` (Debian's `redis-server` when missing) on a
# free port, without persistence; the Redis Cluster is three more `redis-server`s in cluster
# mode (REDIS_CLUSTER_NODES_TEST, for the cluster-mode suites). All keep their data under
# .cache/test-services, which each start wipes. A developer who sets DATABASE_URL (or
# REDIS_URL, or REDIS_CLUSTER_NODES_TEST) keeps their own server for it: nothing is started for
# that one. WAREHOUSE_URL, when unset, names the `warehouse` database on the server of
# DATABASE_URL (the throwaway cluster's, or the developer's).
#
# Sourced (tools/test.sh does), it defines start_test_services and stop_test_services, which
# stop only what this shell started. Its PostgreSQL and Redis helpers also start the dev stack's
# own servers (tools/lib/dev-services.sh), with their data kept between runs.
if [[ -z "${REPO:-}" ]] || ! declare -F ensure_debian_package >/dev/null; then
  source "$(dirname "${BASH_SOURCE[0]}")/bootstrap.sh"
fi

# Where the servers keep their data and pid files (its own test points it elsewhere).
TEST_SERVICES_DIR="${TEST_SERVICES_DIR:-$REPO/.cache/test-services}"
# The suites open many pools at once (two jest projects in parallel, each suite its own
# scratch databases, pools of up to 10): at least what the machine's default server allows
# (Debian's 100), with room to spare; a connection slot costs little shared memory.
TEST_PG_MAX_CONNECTIONS=200

# A port nothing listens on now (the kernel's choice); a server that loses it to another
# process before binding fails to start and is retried on a new one.
free_port() {
  node -e "const s=require('net').createServer();s.listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})"
}

# The bin directory of the installed PostgreSQL, 15 first; installs Debian's package if none.
pg_bindir() {
  local dir
  for dir in /usr/lib/postgresql/15/bin /usr/lib/postgresql/*/bin; do
    [[ -x "$dir/initdb" && -x "$dir/pg_ctl" ]] && { echo "$dir"; return 0; }
  done
  ensure_debian_package /usr/lib/postgresql/15/bin/initdb postgresql "initdb and pg_ctl, for the tests' and the dev stack's own PostgreSQL"
  echo /usr/lib/postgresql/15/bin
}

# initdb and the server refuse to run as root: then they run as the `postgres` user that
# Debian's package creates, on a data directory that user owns.
as_pg_user() {
  if [[ "$(id -u)" == 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi
}

# The PostgreSQL and Redis below serve two purposes, named by their second argument: a
# `throwaway` server for one test run (a free port, data wiped at start and stop, no
# durability paid for) or a `kept` one for the dev stack (tools/lib/dev-services.sh: the port
# it is given, data kept between runs, the servers' own durable defaults). Their first argument
# is the directory of their data and pid files (.cache/test-services, .cache/dev-services).

# The directory the cluster lives in: <dir>/postgres, unless the `postgres` user cannot reach
# it (a checkout under /root): then a directory under $TMPDIR, pipeline-<kind>-postgres.XXXXXX.
# Either is recorded in <dir>/postgres.dir, so that `stop`, and a kept cluster's next start,
# find it.
pg_state_dir() { # dir, throwaway|kept
  local dir
  if [[ -f "$1/postgres.dir" ]] && dir="$(cat "$1/postgres.dir")" && [[ -d "$dir" ]]; then
    echo "$dir"
    return 0
  fi
  dir="$1/postgres"
  mkdir -p "$dir"
  if [[ "$(id -u)" == 0 ]]; then
    chown postgres: "$dir"
    if ! runuser -u postgres -- test -w "$dir"; then
      rmdir "$dir"
      dir="$(mktemp -d "${TMPDIR:-/tmp}/pipeline-$2-postgres.XXXXXX")"
      chown postgres: "$dir"
    fi
  fi
  echo "$dir" >"$1/postgres.dir"
  echo "$dir"
}

# The port of the cluster of <dir> when it runs: its postmaster.pid names a live `postgres`
# (not a stale file a reboot left, whose pid another process may have by now).
postgres_cluster_port() { # dir
  local dir pid
  [[ -f "$1/postgres.dir" ]] && dir="$(cat "$1/postgres.dir")" && [[ -f "$dir/data/postmaster.pid" ]] || return 1
  pid="$(sed -n 1p "$dir/data/postmaster.pid")"
  [[ -n "$pid" && "$(ps -o comm= -p "$pid" 2>/dev/null)" == postgres ]] || return 1
  sed -n 4p "$dir/data/postmaster.pid"
}

# Stops the cluster of <dir> (fast: running sessions are ended, then a clean shutdown); a
# throwaway one is deleted too.
stop_postgres_cluster() { # dir, throwaway|kept
  local dir
  [[ -f "$1/postgres.dir" ]] || return 0
  dir="$(cat "$1/postgres.dir")"
  if postgres_cluster_port "$1" >/dev/null; then
    as_pg_user "$(pg_bindir)/pg_ctl" -D "$dir/data" -m fast -w -t 60 stop >/dev/null 2>&1 ||
      { log "pg_ctl stop failed; killing the postmaster"; kill -KILL "$(head -n 1 "$dir/data/postmaster.pid")" 2>/dev/null || true; }
  fi
  if [[ "$2" == throwaway ]]; then rm -rf "$dir" "$1/postgres.dir"; fi
}

# Starts a cluster of the installed PostgreSQL: trust authentication, user `postgres`, TCP on
# 127.0.0.1 only. Throwaway: a new cluster (one a killed run left is deleted first) on a free
# port, another port when that one is lost to another process before the server binds it.
# Kept: the cluster of <dir> (made the first time) on the port given. Sets PG_PORT and PG_DIR.
start_postgres_cluster() { # dir, throwaway|kept, [port]
  local bin dir port attempt attempts=3 initdb_flags=() settings=
  bin="$(pg_bindir)" || return 1
  if [[ "$2" == throwaway ]]; then
    stop_postgres_cluster "$1" throwaway
    # Its data is thrown away, so no durability (fsync, full pages) is paid for; small shared
    # buffers on a machine shared by many. autovacuum off, as on the machine's own server, so
    # that it does not compete with the suites for two cores.
    initdb_flags=(--no-sync)
    settings="max_connections = $TEST_PG_MAX_CONNECTIONS
shared_buffers = 64MB
fsync = off
synchronous_commit = off
full_page_writes = off
autovacuum = off"
  fi
  [[ -n "${3:-}" ]] && attempts=1
  dir="$(pg_state_dir "$1" "$2")" || return 1
  if [[ ! -d "$dir/data" ]]; then
    # Made aside and moved in whole: an interrupted initdb never leaves a half-made cluster.
    rm -rf "$dir/data.new"
    as_pg_user "$bin/initdb" -D "$dir/data.new" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 "${initdb_flags[@]}" \
      >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; log "initdb failed"; return 1; }
    mv "$dir/data.new" "$dir/data"
  fi
  for attempt in $(seq 1 "$attempts"); do
    port="${3:-$(free_port)}"
    # No Unix socket: every client connects over TCP by URL (and a socket path under a deep
    # checkout could exceed the 107-byte limit).
    cat >"$dir/data/postgresql.auto.conf" <<CONF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = ''
$settings
CONF
    if as_pg_user "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start >/dev/null 2>&1; then
      echo "$port" >"$dir/port"
      PG_PORT=$port
      PG_DIR=$dir
      return 0
    fi
    log "PostgreSQL did not start on port $port (attempt $attempt); its log:"
    tail -n 5 "$dir/server.log" >&2 || true
  done
  return 1
}

# The `pipeline` database (DATABASE_URL) and the `warehouse` one (WAREHOUSE_URL, unless set)
# of the PostgreSQL on 127.0.0.1:<port>.
export_postgres_urls() { # port
  export DATABASE_URL="postgres://postgres@127.0.0.1:$1/pipeline"
  export WAREHOUSE_URL="${WAREHOUSE_URL:-postgres://postgres@127.0.0.1:$1/warehouse}"
}

stop_throwaway_postgres() { stop_postgres_cluster "$TEST_SERVICES_DIR" throwaway; }

start_throwaway_postgres() {
  start_postgres_cluster "$TEST_SERVICES_DIR" throwaway || return 1
  export_postgres_urls "$PG_PORT"
  PG_STARTED_HERE=1
  log "PostgreSQL $("$(pg_bindir)/postgres" --version | awk '{print $3}') for this run on 127.0.0.1:$PG_PORT (data in ${PG_DIR#"$REPO/"})"
}

# The pid of the Redis of <dir> when it runs.
redis_pid() { # dir
  local pid
  [[ -f "$1/redis/redis.pid" ]] || return 1
  pid="$(cat "$1/redis/redis.pid")"
  [[ -n "$pid" && "$(ps -o comm= -p "$pid" 2>/dev/null)" == redis-server ]] && echo "$pid"
}

# Stops the Redis of <dir> (SIGTERM: a kept one writes its append-only file out first); a
# throwaway one's directory is deleted too.
stop_redis_server() { # dir, throwaway|kept
  local pid
  if pid="$(redis_pid "$1")"; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  if [[ "$2" == throwaway ]]; then rm -rf "$1/redis"; fi
}

# Starts `redis-server` with its files in <dir>/redis. Throwaway: on a free port (another when
# that one is lost), no RDB snapshots and no append-only file, so nothing of a run outlives it.
# Kept: on the port given, every write in the append-only file, read back at the next start.
# Sets REDIS_PORT.
start_redis_server() { # dir, throwaway|kept, [port]
  local dir="$1/redis" port attempt attempts=3 appendonly=yes
  (ensure_debian_package /usr/bin/redis-server redis-server "the tests' and the dev stack's own Redis") || return 1
  if [[ "$2" == throwaway ]]; then
    stop_redis_server "$1" throwaway
    appendonly=no
  fi
  [[ -n "${3:-}" ]] && attempts=1
  mkdir -p "$dir"
  for attempt in $(seq 1 "$attempts"); do
    port="${3:-$(free_port)}"
    redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly "$appendonly" --daemonize yes \
      --pidfile "$dir/redis.pid" --logfile "$dir/redis.log" --dir "$dir" >/dev/null 2>&1 || true
    for _ in $(seq 1 100); do
      if [[ "$(redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null)" == PONG ]]; then
        echo "$port" >"$dir/port"
        REDIS_PORT=$port
        return 0
      fi
      sleep 0.1
    done
    log "Redis did not answer on port $port (attempt $attempt); its log:"
    tail -n 5 "$dir/redis.log" >&2 || true
    stop_redis_server "$1" "$2"
    mkdir -p "$dir"
  done
  return 1
}

stop_throwaway_redis() { stop_redis_server "$TEST_SERVICES_DIR" throwaway; }

start_throwaway_redis() {
  start_redis_server "$TEST_SERVICES_DIR" throwaway || return 1
  export REDIS_URL="redis://127.0.0.1:$REDIS_PORT"
  REDIS_STARTED_HERE=1
  log "Redis $(redis-server --version | sed -n 's/.*v=\([^ ]*\).*/\1/p') for this run on 127.0.0.1:$REDIS_PORT"
}

# A three-node Redis Cluster (three primaries, no replicas) for the suites that test cluster
# mode (REDIS_CLUSTER_NODES): each node on a free port with its cluster bus on another
# (--cluster-port, so that port + 10000 need not be free), no persistence, its nodes file under
# .cache/test-services/redis-cluster. Exports REDIS_CLUSTER_NODES_TEST=127.0.0.1:p1,....
REDIS_CLUSTER_SIZE=3

stop_throwaway_redis_cluster() {
  local dir="$TEST_SERVICES_DIR/redis-cluster" pidfile pid pids=()
  # Every pid is read before any node is signalled: a node removes its pid file as it shuts
  # down, so a file listed a moment ago may be gone when read.
  for pidfile in "$dir"/redis-*.pid; do
    pid="$(cat "$pidfile" 2>/dev/null)" || continue
    [[ -n "$pid" ]] && pids+=("$pid")
  done
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
  done
  rm -rf "$dir"
}

# True once every node reports cluster_state:ok (all 16384 slots served).
redis_cluster_ok() { # port...
  local port
  for port in "$@"; do
    redis-cli -h 127.0.0.1 -p "$port" cluster info 2>/dev/null | grep -q '^cluster_state:ok' || return 1
  done
}

start_throwaway_redis_cluster() {
  local dir="$TEST_SERVICES_DIR/redis-cluster" attempt port ports bus nodes i up
  (ensure_debian_package /usr/bin/redis-server redis-server "the tests' own Redis") || return 1
  stop_throwaway_redis_cluster
  for attempt in 1 2 3; do
    mkdir -p "$dir"
    ports=()
    for i in $(seq 1 "$REDIS_CLUSTER_SIZE"); do
      port="$(free_port)"
      bus="$(free_port)"
      ports+=("$port")
      redis-server --port "$port" --cluster-port "$bus" --bind 127.0.0.1 --cluster-enabled yes \
        --cluster-config-file "$dir/nodes-$port.conf" --save '' --appendonly no --daemonize yes \
        --pidfile "$dir/redis-$port.pid" --logfile "$dir/redis-$port.log" --dir "$dir" >/dev/null 2>&1 || true
    done
    up=0
    for _ in $(seq 1 100); do
      up=0
      for port in "${ports[@]}"; do
        [[ "$(redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null)" == PONG ]] && up=$((up + 1))
      done
      ((up == REDIS_CLUSTER_SIZE)) && break
      sleep 0.1
    done
    if ((up == REDIS_CLUSTER_SIZE)) &&
      redis-cli --cluster create $(printf '127.0.0.1:%s ' "${ports[@]}") --cluster-replicas 0 --cluster-yes \
        >"$dir/create.log" 2>&1; then
      # The nodes learn of each other over the bus: a few seconds at most.
      for _ in $(seq 1 300); do
        if redis_cluster_ok "${ports[@]}"; then
          nodes="$(printf '127.0.0.1:%s,' "${ports[@]}")"
          export REDIS_CLUSTER_NODES_TEST="${nodes%,}"
          echo "$REDIS_CLUSTER_NODES_TEST" >"$dir/nodes"
          REDIS_CLUSTER_STARTED_HERE=1
          log "Redis Cluster of $REDIS_CLUSTER_SIZE primaries for this run on $REDIS_CLUSTER_NODES_TEST"
          return 0
        fi
        sleep 0.1
      done
    fi
    log "the Redis Cluster did not form (attempt $attempt); its logs:"
    tail -n 5 "$dir"/create.log "$dir"/redis-*.log >&2 2>/dev/null || true
    stop_throwaway_redis_cluster
  done
  return 1
}

# Starts what the environment does not name; exports DATABASE_URL, WAREHOUSE_URL, REDIS_URL
# and REDIS_CLUSTER_NODES_TEST.
start_test_services() {
  PG_STARTED_HERE=0
  REDIS_STARTED_HERE=0
  REDIS_CLUSTER_STARTED_HERE=0
  mkdir -p "$TEST_SERVICES_DIR"
  if [[ -n "${DATABASE_URL:-}" ]]; then
    log "DATABASE_URL is set: the tests use that PostgreSQL"
    # The dev stack's warehouse on the same server, not the default's 127.0.0.1:5432.
    if [[ -z "${WAREHOUSE_URL:-}" ]]; then
      WAREHOUSE_URL="$(node -p "const u = new URL(process.argv[1]); u.pathname = '/warehouse'; u.href" "$DATABASE_URL")"
      export WAREHOUSE_URL
    fi
  else
    start_throwaway_postgres || { log "cannot start the tests' PostgreSQL"; return 1; }
  fi
  if [[ -n "${REDIS_URL:-}" ]]; then
    log "REDIS_URL is set: the tests use that Redis"
  else
    start_throwaway_redis || { log "cannot start the tests' Redis"; return 1; }
  fi
  if [[ -n "${REDIS_CLUSTER_NODES_TEST:-}" ]]; then
    log "REDIS_CLUSTER_NODES_TEST is set: the cluster tests use that Redis Cluster"
  else
    start_throwaway_redis_cluster || { log "cannot start the tests' Redis Cluster"; return 1; }
  fi
  # A server the developer named must answer (the throwaway ones do by now).
  require_services
}

# Stops (and deletes) only what start_test_services started in this shell.
stop_test_services() {
  if [[ "${PG_STARTED_HERE:-0}" == 1 ]]; then stop_throwaway_postgres; PG_STARTED_HERE=0; fi
  if [[ "${REDIS_STARTED_HERE:-0}" == 1 ]]; then stop_throwaway_redis; REDIS_STARTED_HERE=0; fi
  if [[ "${REDIS_CLUSTER_STARTED_HERE:-0}" == 1 ]]; then
    stop_throwaway_redis_cluster
    REDIS_CLUSTER_STARTED_HERE=0
  fi
}

print_test_service_env() {
  local dir
  if [[ -f "$TEST_SERVICES_DIR/postgres.dir" ]] && dir="$(cat "$TEST_SERVICES_DIR/postgres.dir")" && [[ -f "$dir/port" ]]; then
    echo "export DATABASE_URL=postgres://postgres@127.0.0.1:$(cat "$dir/port")/pipeline"
    echo "export WAREHOUSE_URL=postgres://postgres@127.0.0.1:$(cat "$dir/port")/warehouse"
  fi
  if redis_pid "$TEST_SERVICES_DIR" >/dev/null && [[ -f "$TEST_SERVICES_DIR/redis/port" ]]; then
    echo "export REDIS_URL=redis://127.0.0.1:$(cat "$TEST_SERVICES_DIR/redis/port")"
  fi
  if [[ -f "$TEST_SERVICES_DIR/redis-cluster/nodes" ]]; then
    echo "export REDIS_CLUSTER_NODES_TEST=$(cat "$TEST_SERVICES_DIR/redis-cluster/nodes")"
  fi
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  case "${1:-}" in
    start)
      start_test_services
      # What this run uses, started here or named by the developer.
      echo "export DATABASE_URL=$DATABASE_URL"
      [[ -n "${WAREHOUSE_URL:-}" ]] && echo "export WAREHOUSE_URL=$WAREHOUSE_URL"
      echo "export REDIS_URL=$REDIS_URL"
      echo "export REDIS_CLUSTER_NODES_TEST=$REDIS_CLUSTER_NODES_TEST"
      ;;
    stop)
      stop_throwaway_postgres
      stop_throwaway_redis
      stop_throwaway_redis_cluster
      log "stopped"
      ;;
    env) print_test_service_env ;;
    *) log "usage: bash tools/lib/throwaway-services.sh start|stop|env"; exit 2 ;;
  esac
fi
