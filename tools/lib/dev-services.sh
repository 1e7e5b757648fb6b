#!/usr/bin/env bash
# The dev stack's PostgreSQL and Redis (sourced by tools/dev.sh). Each is the server the
# environment names (DATABASE_URL, REDIS_URL); else the one answering on 127.0.0.1:5432 and
# :6379 (DEV_POSTGRES_PORT, DEV_REDIS_PORT); else, when none answers there, one of the dev
# stack's own, started on that port with the test command's helpers
# (tools/lib/throwaway-services.sh) but with its data kept between runs under DEV_SERVICES_DIR
# (.cache/dev-services: postgres/, redis/), so a developer's accounts and warehouse rows survive
# a restart.
#
# Stacks on other ports (the smoke tests beside a developer's stack) share these servers: each
# stack that uses one has an entry in DEV_SERVICES_DIR/users, and the last one to stop stops the
# server (its data stays). A server that a stack killed outright left running is taken over by
# the next one. One lock (DEV_SERVICES_DIR/lock, flock) orders these starts and stops.
source "$(dirname "${BASH_SOURCE[0]}")/throwaway-services.sh"

DEV_SERVICES_DIR="${DEV_SERVICES_DIR:-$REPO/.cache/dev-services}"
DEV_POSTGRES_PORT="${DEV_POSTGRES_PORT:-5432}"
DEV_REDIS_PORT="${DEV_REDIS_PORT:-6379}"

# What a message calls a path: relative to the checkout when inside it.
shown() { echo "${1#"$REPO/"}"; }

# A stack's entry holds its start time, so that a pid used again later is not taken for it.
started_at() { ps -o lstart= -p "$1" 2>/dev/null; }

# The pids of the live stacks, other than this one, that use the dev stack's own <service>;
# the entries of stacks that are gone are removed.
other_users() { # postgres|redis
  local entry pid
  for entry in "$DEV_SERVICES_DIR/users/$1".*; do
    [[ -f "$entry" ]] || continue
    pid="${entry##*.}"
    [[ "$pid" == "$$" ]] && continue
    if [[ "$(started_at "$pid")" == "$(cat "$entry")" ]]; then echo "$pid"; else rm -f "$entry"; fi
  done
}

# Runs the command holding the lock. The servers it starts outlive it, so they do not get the
# lock's file descriptor (a server holding it would hold the lock). Held already (Ctrl-C during
# a start runs the stack's cleanup, which releases), the command just runs.
dev_services_lock_fd=
with_dev_services_lock() { # command...
  local status=0
  if [[ -n "$dev_services_lock_fd" ]]; then "$@"; return; fi
  mkdir -p "$DEV_SERVICES_DIR/users"
  exec {dev_services_lock_fd}>"$DEV_SERVICES_DIR/lock"
  if flock -w 120 "$dev_services_lock_fd"; then
    "$@" {dev_services_lock_fd}>&- || status=$?
  else
    log "another tools/dev.sh held $(shown "$DEV_SERVICES_DIR/lock") for 120s"
    status=1
  fi
  exec {dev_services_lock_fd}>&-
  dev_services_lock_fd=
  return "$status"
}

# The dev stack's own server of each kind: its name, data directory, port (when it runs), start
# and stop.
service_name() { case $1 in postgres) echo PostgreSQL ;; redis) echo Redis ;; esac; }
own_data_dir() { # postgres|redis
  case $1 in
    postgres) cat "$DEV_SERVICES_DIR/postgres.dir" 2>/dev/null || echo "$DEV_SERVICES_DIR/postgres" ;;
    redis) echo "$DEV_SERVICES_DIR/redis" ;;
  esac
}
own_running_port() { # postgres|redis
  case $1 in
    postgres) postgres_cluster_port "$DEV_SERVICES_DIR" ;;
    redis) redis_pid "$DEV_SERVICES_DIR" >/dev/null && cat "$DEV_SERVICES_DIR/redis/port" ;;
  esac
}
start_own() { # postgres|redis, port
  case $1 in
    postgres) start_postgres_cluster "$DEV_SERVICES_DIR" kept "$2" ;;
    redis) start_redis_server "$DEV_SERVICES_DIR" kept "$2" ;;
  esac
}
stop_own() { # postgres|redis
  case $1 in
    postgres) stop_postgres_cluster "$DEV_SERVICES_DIR" kept ;;
    redis) stop_redis_server "$DEV_SERVICES_DIR" kept ;;
  esac
}

# This stack's entry as a user of the dev stack's own <service>.
register_use() { started_at $$ >"$DEV_SERVICES_DIR/users/$1.$$"; }

# The server answering on <port>, or else one of the dev stack's own started there, which this
# stack then has an entry for (made before the start, so that a Ctrl-C during it stops the
# server). Run holding the lock.
use_dev_service() { # postgres|redis, port
  local service=$1 port=$2 name running others how
  name="$(service_name "$service")"
  if running="$(own_running_port "$service")"; then
    if [[ "$running" != "$port" ]]; then
      log "the dev stack's own $name (data in $(shown "$(own_data_dir "$service")")) runs on 127.0.0.1:$running, not $port: set DEV_${service^^}_PORT=$running to share it, or DEV_SERVICES_DIR for another"
      return 1
    fi
    others="$(other_users "$service" | paste -sd, -)"
    how="left running by a stack that did not stop cleanly: taking it over"
    [[ -z "$others" ]] || how="started for the stack(s) pid $others: using it too"
    log "$name on 127.0.0.1:$port is the dev stack's own (data in $(shown "$(own_data_dir "$service")")), $how; the last stack using it stops it"
  elif port_open 127.0.0.1 "$port"; then
    return 0 # the machine's own, used as it is
  else
    register_use "$service"
    start_own "$service" "$port" || { log "cannot start the dev stack's own $name"; return 1; }
    log "no $name answered on 127.0.0.1:$port: started one of its own, data in $(shown "$(own_data_dir "$service")")"
  fi
  register_use "$service"
}

# For the banner: where the server of <service> comes from, when it is the dev stack's own.
own_service_note() { # postgres|redis
  [[ -f "$DEV_SERVICES_DIR/users/$1.$$" ]] || return 0
  echo "   (started by tools/dev.sh, data kept in $(shown "$(own_data_dir "$1")"))"
}

# Sets DATABASE_URL (and WAREHOUSE_URL, when unset) and REDIS_URL for the stack, starting the
# servers of its own that it needs; fails when a server does not answer.
use_dev_services() {
  if [[ -z "${DATABASE_URL:-}" ]]; then
    with_dev_services_lock use_dev_service postgres "$DEV_POSTGRES_PORT" || return 1
    export_postgres_urls "$DEV_POSTGRES_PORT"
  fi
  if [[ -z "${REDIS_URL:-}" ]]; then
    with_dev_services_lock use_dev_service redis "$DEV_REDIS_PORT" || return 1
    export REDIS_URL="redis://127.0.0.1:$DEV_REDIS_PORT"
  fi
  require_services
}

release_under_lock() {
  local service name others
  for service in postgres redis; do
    [[ -f "$DEV_SERVICES_DIR/users/$service.$$" ]] || continue
    rm -f "$DEV_SERVICES_DIR/users/$service.$$"
    name="$(service_name "$service")"
    others="$(other_users "$service" | paste -sd, -)"
    if [[ -n "$others" ]]; then
      log "left its own $name running for the stack(s) pid $others"
    else
      stop_own "$service"
      log "stopped its own $name (data kept in $(shown "$(own_data_dir "$service")"))"
    fi
  done
}

# This stack no longer uses the dev stack's own servers: each one no other live stack uses is
# stopped, its data left in place.
release_dev_services() {
  [[ -f "$DEV_SERVICES_DIR/users/postgres.$$" || -f "$DEV_SERVICES_DIR/users/redis.$$" ]] || return 0
  with_dev_services_lock release_under_lock
}
