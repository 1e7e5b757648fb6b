#!/usr/bin/env bash
# Quick start, command one: installs everything and runs the whole local stack in the
# foreground (Kafka, migrations, control plane, ingestion, delivery consumers). Ctrl-C stops
# all of it; the Kafka broker too when this script started it.
#
# Environment: CONTROL_PLANE_PORT (3000), INGESTION_PORT (3001), DATABASE_URL, REDIS_URL,
# KAFKA_PORT (9092), LOG_FORMAT (pretty here), LOG_LEVEL (info), DELIVERY_DESTINATIONS (warehouse,log;
# any kind of `delivery --destination`, e.g. warehouse,log,amplitude,webhook), DELIVERY_HTTP_PORT_BASE
# (9400: each consumer's /metrics and /health, on consecutive ports).
source "$(dirname "${BASH_SOURCE[0]}")/lib/bootstrap.sh"
cd "$REPO"

cp_port="${CONTROL_PLANE_PORT:-3000}"
ing_port="${INGESTION_PORT:-3001}"
destinations="${DELIVERY_DESTINATIONS:-warehouse,log}"
delivery_port_base="${DELIVERY_HTTP_PORT_BASE:-9400}"
export LOG_FORMAT="${LOG_FORMAT:-pretty}"
export DATABASE_URL="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/pipeline}"
export REDIS_URL="${REDIS_URL:-redis://127.0.0.1:6379}"

install_dependencies
require_services

# Local secrets of the control plane, made once and kept in the ignored .cache (the
# environment wins when it sets them). Production sets its own; see README.
secrets="$REPO/.cache/dev-secrets.env"
if [[ ! -f "$secrets" ]]; then
  mkdir -p "$REPO/.cache"
  (umask 077 && {
    echo "DEV_CREDENTIALS_ENCRYPTION_KEYS=dev1:$(head -c 32 /dev/urandom | base64)"
    echo "DEV_INTERNAL_SERVICE_TOKEN=$(head -c 32 /dev/urandom | base64 | tr -d '/+=')"
  } >"$secrets")
fi
# shellcheck source=/dev/null
source "$secrets"
export CREDENTIALS_ENCRYPTION_KEYS="${CREDENTIALS_ENCRYPTION_KEYS:-$DEV_CREDENTIALS_ENCRYPTION_KEYS}"
export INTERNAL_SERVICE_TOKEN="${INTERNAL_SERVICE_TOKEN:-$DEV_INTERNAL_SERVICE_TOKEN}"
for port in "$cp_port" "$ing_port"; do
  if port_open 127.0.0.1 "$port"; then log "port $port is taken: is a stack already running? (set CONTROL_PLANE_PORT / INGESTION_PORT)"; exit 1; fi
done
log "building"
"$PNPM" exec nx run-many -t build --output-style=static >/dev/null || { "$PNPM" exec nx run-many -t build; exit 1; }

start_kafka
supervisor=
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
  log "stopped"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

log "applying migrations"
node apps/control-plane/dist/database/migrate.js

# `exec`: concurrently then supervises and signals the service itself, not a shell around it.
names=(control-plane ingestion)
commands=(
  "PORT=$cp_port exec node apps/control-plane/dist/main.js"
  "PORT=$ing_port MANAGED_AUTH_ENABLED=true CONTROL_PLANE_URL=http://127.0.0.1:$cp_port exec node apps/ingestion/dist/main.js"
)
IFS=',' read -ra kinds <<<"$destinations"
delivery_ports=()
for i in "${!kinds[@]}"; do
  kind=${kinds[$i]}
  delivery_ports+=("$kind :$((delivery_port_base + i))")
  names+=("delivery-$kind")
  commands+=("DELIVERY_HTTP_PORT=$((delivery_port_base + i)) CONTROL_PLANE_URL=http://127.0.0.1:$cp_port exec node apps/delivery/dist/main.js --destination $kind")
done

(
  # Announce once the HTTP services answer.
  for _ in $(seq 1 120); do
    if curl -fsS "http://127.0.0.1:$cp_port/health" >/dev/null 2>&1 && curl -fsS "http://127.0.0.1:$ing_port/health" >/dev/null 2>&1; then
      cat >&2 <<BANNER

  Stack is up.
    control plane   http://127.0.0.1:$cp_port        (API reference: /docs, OpenAPI: /api/v1/openapi.json)
    ingestion       http://127.0.0.1:$ing_port        (health: /health)
    kafka           ${KAFKA_BROKERS}
    delivery        ${delivery_ports[*]}   (each: /metrics, /health)
    postgres        ${DATABASE_URL}

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
