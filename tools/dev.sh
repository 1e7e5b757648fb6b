#!/usr/bin/env bash
# Quick start, command one: installs everything and runs the whole local stack in the
# foreground (Kafka, migrations, control plane, ingestion, delivery consumers). Ctrl-C stops
# all of it; the Kafka broker too when this script started it.
#
# PostgreSQL and Redis are the ones answering on 127.0.0.1:5432 and :6379 (or DATABASE_URL,
# REDIS_URL). When none answers there, it starts its own there (tools/lib/dev-services.sh), says
# so, and stops them with the stack; their data is kept in .cache/dev-services between runs.
#
#   bash tools/dev.sh            start (reusing a running broker and its data)
#   bash tools/dev.sh --reset    start from an empty broker (kafka.sh reset first)
#
# Environment: CONTROL_PLANE_PORT (3000), INGESTION_PORT (3001), INGESTION_METRICS_PORT (ingestion's
# /metrics; INGESTION_PORT + 6463, so 9464 by default), DATABASE_URL, REDIS_URL, DEV_POSTGRES_PORT
# (5432) and DEV_REDIS_PORT (6379: where the servers are looked for, or started, when those two
# are unset), DEV_SERVICES_DIR (.cache/dev-services: the data of the servers it starts),
# KAFKA_PORT (9092), LOG_FORMAT (pretty here), LOG_LEVEL (info), DELIVERY_DESTINATIONS (warehouse,log;
# any kind of `delivery --destination`, e.g. warehouse,log,amplitude,webhook), DELIVERY_HTTP_PORT_BASE
# (9400: each consumer's /metrics and /health, on consecutive ports), DEV_SECRETS_FILE
# (.cache/dev-secrets.env: the local secrets, made when missing), DEV_SKIP_BUILD (0; 1: run
# the dist as it is, for a caller that has just built it, as tools/test.sh's later dev-stack
# steps), DEV_RESTART_CRASHED (1; 0
# under CI=true: a crashed delivery consumer is restarted with a growing delay instead of
# stopping the stack).
source "$(dirname "${BASH_SOURCE[0]}")/lib/bootstrap.sh"
source "$(dirname "${BASH_SOURCE[0]}")/lib/dev-services.sh"
cd "$REPO"

reset=0
case "${1:-}" in
  '') ;;
  --reset) reset=1 ;;
  *) log "usage: bash tools/dev.sh [--reset]"; exit 2 ;;
esac
cp_port="${CONTROL_PLANE_PORT:-3000}"
ing_port="${INGESTION_PORT:-3001}"
ing_metrics_port="${INGESTION_METRICS_PORT:-$((ing_port + 6463))}"
destinations="${DELIVERY_DESTINATIONS:-warehouse,log}"
delivery_port_base="${DELIVERY_HTTP_PORT_BASE:-9400}"
export LOG_FORMAT="${LOG_FORMAT:-pretty}"

install_dependencies

# Local secrets of the control plane, made once and kept in the ignored .cache (the
# environment wins when it sets them; DEV_SECRETS_FILE names another file, as the first-event
# test does). Production sets its own; see README. A new file on a database an earlier one
# filled works: the control plane seals the default warehouse again from WAREHOUSE_URL.
secrets="${DEV_SECRETS_FILE:-$REPO/.cache/dev-secrets.env}"
if [[ ! -f "$secrets" ]]; then
  mkdir -p "$(dirname "$secrets")"
  (umask 077 && {
    echo "DEV_CREDENTIALS_ENCRYPTION_KEYS=dev1:$(head -c 32 /dev/urandom | base64)"
    echo "DEV_INTERNAL_SERVICE_TOKEN=$(head -c 32 /dev/urandom | base64 | tr -d '/+=')"
  } >"$secrets")
fi
# shellcheck source=/dev/null
source "$secrets"
export CREDENTIALS_ENCRYPTION_KEYS="${CREDENTIALS_ENCRYPTION_KEYS:-$DEV_CREDENTIALS_ENCRYPTION_KEYS}"
# One internal token per caller (ingestion: resolve; each forwarding consumer: its own kind's
# lookup), derived from the one local secret so an existing .cache/dev-secrets.env keeps working.
internal_token_for() { printf '%s:%s' "$DEV_INTERNAL_SERVICE_TOKEN" "$1" | sha256sum | cut -d' ' -f1; }
export INTERNAL_TOKEN_INGESTION="${INTERNAL_TOKEN_INGESTION:-$(internal_token_for ingestion)}"
# One stack per set of ports: a second start says which one runs, and on which ports. (The
# smoke test's stack, on its own ports, runs beside a developer's.)
mkdir -p "$REPO/.cache"
lock="$REPO/.cache/dev-stack-$cp_port.pid"
if [[ -f "$lock" ]]; then
  read -r running_pid running_kafka running_ports <"$lock" || true
  if [[ -n "${running_pid:-}" ]] && kill -0 "$running_pid" 2>/dev/null; then
    log "a stack is already running: pid $running_pid ($(ps -o args= -p "$running_pid" 2>/dev/null)), ports ${running_ports:-?}; stop it with Ctrl-C in its terminal or: kill $running_pid"
    exit 1
  fi
fi
# The process listening on a port, as "name (pid N)", for the messages below.
holder() { ss -ltnpH "sport = :$1" 2>/dev/null | sed -n 's/.*users:(("\([^"]*\)",pid=\([0-9]*\).*/\1 (pid \2)/p' | head -n 1; }
for port in "$cp_port" "$ing_port" "$ing_metrics_port"; do
  if port_open 127.0.0.1 "$port"; then
    taker="$(holder "$port")"
    log "port $port is taken by ${taker:-another process}: is a stack already running? (set CONTROL_PLANE_PORT / INGESTION_PORT / INGESTION_METRICS_PORT)"
    exit 1
  fi
done
if ((reset)); then
  if "$REPO/tools/kafka/kafka.sh" status >/dev/null 2>&1 && ! "$REPO/tools/kafka/kafka.sh" owned; then
    log "--reset: the broker on ${KAFKA_PORT:-9092} was not started by tools/kafka/kafka.sh; not deleting its data"
    exit 1
  fi
  log "--reset: stopping the broker and deleting its data"
  "$REPO/tools/kafka/kafka.sh" reset
fi

supervisor=
lock_written=0
cleanup() {
  # The services' own shutdown is bounded (SHUTDOWN_TIMEOUT_MS); wait for all of it, so that
  # when this script returns nothing of the stack is left.
  trap '' INT TERM
  trap - EXIT
  if [[ -n "$supervisor" ]] && kill -0 "$supervisor" 2>/dev/null; then
    kill -TERM "$supervisor" 2>/dev/null || true
    while kill -0 "$supervisor" 2>/dev/null; do wait "$supervisor" 2>/dev/null || true; done
  fi
  stop_kafka_if_started_here
  release_dev_services
  # Only this stack's own lock: a killed stack's names the broker it started, for the next start.
  if ((lock_written)); then rm -f "$lock"; fi
  log "stopped"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
# Before the build, so that a server that does not answer is said at once.
use_dev_services

if [[ "${DEV_SKIP_BUILD:-0}" == 1 ]]; then
  log "not building: DEV_SKIP_BUILD=1 (the caller has just built everything)"
else
  log "building"
  "$PNPM" exec nx run-many -t build --output-style=static >/dev/null || { "$PNPM" exec nx run-many -t build; exit 1; }
fi

start_kafka
# A broker that a killed earlier stack started (its lock names it) is this stack's to stop.
if [[ "${running_kafka:-0}" == 1 && "$KAFKA_STARTED_HERE" == 0 ]]; then
  log "adopting the broker a stopped stack (pid ${running_pid:-?}) left running"
  KAFKA_STARTED_HERE=1
fi
echo "$$ $KAFKA_STARTED_HERE control-plane:$cp_port,ingestion:$ing_port" >"$lock"
lock_written=1

log "applying migrations"
node apps/control-plane/dist/database/migrate.js

# The flags ingestion's image starts it with (a V8 heap setting): the dev stack runs what ships.
ingestion_node_flags=$(node tools/deploy/node-flags.mjs ingestion)
delivery_node_flags=$(node tools/deploy/node-flags.mjs delivery)
# `exec`: concurrently then supervises and signals the service itself, not a shell around it.
names=(control-plane ingestion)
commands=(
  "PORT=$cp_port exec node apps/control-plane/dist/main.js"
  "PORT=$ing_port METRICS_PORT=$ing_metrics_port MANAGED_AUTH_ENABLED=true CONTROL_PLANE_URL=http://127.0.0.1:$cp_port INTERNAL_SERVICE_TOKEN=\"\$INTERNAL_TOKEN_INGESTION\" exec node $ingestion_node_flags apps/ingestion/dist/main.js"
)
IFS=',' read -ra kinds <<<"$destinations"
# A consumer restarted after a crash (or a stack started after one was killed) gets its
# partitions once the group drops the dead member: 6 s here, the least Kafka allows, not
# production's 30 s.
delivery_session_timeout="${DELIVERY_SESSION_TIMEOUT_MS:-6000}"
delivery_ports=()
restart_crashed="${DEV_RESTART_CRASHED:-$([[ "${CI:-}" == true ]] && echo 0 || echo 1)}"
for i in "${!kinds[@]}"; do
  kind=${kinds[$i]}
  # The control plane reads the forwarding kinds' variables; the others' are never presented.
  token_var="INTERNAL_TOKEN_DELIVERY_${kind^^}"
  export "$token_var=${!token_var:-$(internal_token_for "delivery-$kind")}"
  delivery_ports+=("$kind :$((delivery_port_base + i))")
  names+=("delivery-$kind")
  # A consumer that crashes (a record it cannot handle, a broker hiccup) comes back after a
  # growing delay; the rest of the stack keeps running. CI wants the crash to fail the run.
  run="exec"
  if [[ "$restart_crashed" == 1 ]]; then run="exec bash tools/lib/restart-crashed.sh delivery-$kind"; fi
  # The token is named, not written, on the command line: ps shows no secret.
  commands+=("DELIVERY_HTTP_PORT=$((delivery_port_base + i)) DELIVERY_SESSION_TIMEOUT_MS=$delivery_session_timeout CONTROL_PLANE_URL=http://127.0.0.1:$cp_port INTERNAL_SERVICE_TOKEN=\"\$$token_var\" $run node $delivery_node_flags apps/delivery/dist/main.js --destination $kind")
done

(
  # Announce once the HTTP services answer.
  for _ in $(seq 1 120); do
    if curl -fsS "http://127.0.0.1:$cp_port/health" >/dev/null 2>&1 && curl -fsS "http://127.0.0.1:$ing_port/health" >/dev/null 2>&1; then
      cat >&2 <<BANNER

  Stack is up.
    control plane   http://127.0.0.1:$cp_port        (API reference: /docs, OpenAPI: /api/v1/openapi.json)
    ingestion       http://127.0.0.1:$ing_port        (probes: /livez, /readyz; metrics: :$ing_metrics_port/metrics)
    kafka           ${KAFKA_BROKERS}
    delivery        ${delivery_ports[*]}   (each: /metrics, /health)
    postgres        ${DATABASE_URL}$(own_service_note postgres)
    redis           ${REDIS_URL}$(own_service_note redis)

  First API key and write key (each key is printed once; store it):
    node apps/control-plane/dist/cli/main.js accounts create --name "My company" --features automations
    node apps/control-plane/dist/cli/main.js api-keys create --account <account id> --scopes all
    node apps/control-plane/dist/cli/main.js write-keys create --account <account id> --name website
  then: curl -H "Authorization: Bearer <API key>" http://127.0.0.1:$cp_port/api/v1/apps

  Stop everything with Ctrl-C.

BANNER
      exit 0
    fi
    sleep 1
  done
  log "services did not answer within 120s; see their logs above"
) &

# The bin directly, not through `pnpm exec`: pnpm would exit on the signal before the
# services finished shutting down.
"$REPO/node_modules/.bin/concurrently" --kill-others --kill-signal SIGTERM --prefix '[{name}]' \
  --names "$(IFS=,; echo "${names[*]}")" --prefix-colors 'blue,green,magenta,cyan,yellow' \
  "${commands[@]}" &
supervisor=$!
wait "$supervisor"
