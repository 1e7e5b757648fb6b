#!/usr/bin/env bash
# What each image's build stage does, without Docker: `pnpm deploy --legacy --prod` of each
# deployable into its own directory (the image's /app), then, from those directories only,
# the migrations run, and the control plane (serving the built console at /console),
# ingestion (hosted) and a warehouse and a forwarding delivery consumer start against the local PostgreSQL, Redis and Kafka on spare
# ports, answer 200 on /health, and exit 0 on SIGTERM. Also checks that no development-only
# package reached a pruned install. Needs the workspace built (the images build it too).
source "$(dirname "${BASH_SOURCE[0]}")/../lib/bootstrap.sh"
cd "$REPO"
ensure_pnpm
set +e

out="$REPO/.cache/pruned"
logs="$REPO/.reports/pruned-install"
rm -rf "$out" "$logs"
mkdir -p "$out" "$logs"
source "$REPO/tools/lib/checks.sh"
started=$SECONDS

# The images' build stage, one deployable each (the migrations image uses the control plane's).
for app in control-plane ingestion delivery; do
  check "pnpm deploy --prod @pipeline/$app" \
    "$PNPM" --filter "@pipeline/$app" deploy --legacy --prod "$out/$app" --reporter=append-only >"$logs/deploy-$app.log" 2>&1
done
only_production() { # dir: no development-only package of the workspace is installed
  local dir=$1 dev
  for dev in typescript jest @swc/core nx eslint tsoa supertest esbuild playwright-core preact uplot; do
    if [[ -e "$dir/node_modules/$dev" ]] || ls "$dir/node_modules/.pnpm" 2>/dev/null | grep -q "^${dev/\//+}@"; then
      echo "$dir has the development package $dev" >&2
      return 1
    fi
  done
}
for app in control-plane ingestion delivery; do check "$app: only production dependencies" only_production "$out/$app"; done

free_port() { node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }
cp_port="$(free_port)"
ing_port="$(free_port)"
wh_port="$(free_port)"
fwd_port="$(free_port)"
ing_metrics_port="$(free_port)"
tag="pruned_$$"
pg_base="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/pipeline}"
with_db() { node -e 'const u=new URL(process.argv[1]);u.pathname="/"+process.argv[2];console.log(u.href)' "$pg_base" "$1"; }
database_url="$(with_db "pipeline_$tag")"
warehouse_url="$(with_db "warehouse_$tag")"

# What a container gets: its own directory as the working directory, NODE_ENV=production and
# the variables the manifests set; nothing from this repository's node_modules.
common=(env -i PATH="$PATH" HOME="$HOME" NODE_ENV=production LOG_FORMAT=json LOG_LEVEL=info
  KAFKA_BROKERS="${KAFKA_BROKERS:-127.0.0.1:9092}" KAFKA_TOPIC_PREFIX="$tag." SHUTDOWN_TIMEOUT_MS=10000)
token="$(head -c 32 /dev/urandom | base64 | tr -d '/+=')"
token="${token}${token}"
# Each internal caller has its own token: the webhook consumer's differs from ingestion's.
webhook_token="$(head -c 32 /dev/urandom | base64 | tr -d '/+=')"
webhook_token="${webhook_token}${webhook_token}"
key="check:$(head -c 32 /dev/urandom | base64)"
pids=()
start() { # name, dir, command...
  local name=$1 dir=$2; shift 2
  (cd "$dir" && exec "${common[@]}" "$@") >"$logs/$name.log" 2>&1 &
  pids+=("$name:$!")
}
healthy() { # url: 200 within 60 s
  local _
  for _ in $(seq 1 120); do
    [[ "$(curl -s -o /dev/null -w '%{http_code}' "$1")" == 200 ]] && return 0
    sleep 0.5
  done
  curl -s "$1" >&2; echo >&2
  return 1
}

# Leave nothing behind, also when interrupted: the processes, the scratch databases and this
# run's topics.
cleanup() {
  local entry
  for entry in "${pids[@]}"; do
    kill -0 "${entry##*:}" 2>/dev/null && kill -KILL "${entry##*:}" 2>/dev/null
  done
  wait 2>/dev/null
  (cd "$out/control-plane" && node -e '
    const { Client } = require("pg");
    (async () => {
      const c = new Client({ connectionString: process.argv[1] });
      await c.connect();
      for (const db of process.argv.slice(2)) await c.query(`DROP DATABASE IF EXISTS "${db}" WITH (FORCE)`);
      await c.end();
    })().catch((e) => { console.error(e.message); process.exit(1); });
  ' "$(with_db postgres)" "pipeline_$tag" "warehouse_$tag") || log "could not drop the scratch databases"
  (cd "$out/ingestion" && node -e '
    const { Kafka, logLevel } = require("kafkajs");
    (async () => {
      const admin = new Kafka({ brokers: process.argv[1].split(","), logLevel: logLevel.NOTHING }).admin();
      await admin.connect();
      const topics = (await admin.listTopics()).filter((t) => t.startsWith(process.argv[2]));
      if (topics.length > 0) await admin.deleteTopics({ topics });
      await admin.disconnect();
    })().catch((e) => { console.error(e.message); process.exit(1); });
  ' "${KAFKA_BROKERS:-127.0.0.1:9092}" "$tag.") || log "could not delete this run's topics"
}
trap cleanup EXIT
trap 'exit 130' INT TERM PIPE

check "migrations run from the pruned install" \
  bash -c 'cd "$1" && shift && exec "$@"' _ "$out/control-plane" "${common[@]}" DATABASE_URL="$database_url" node dist/database/migrate.js \
  >"$logs/migrate.log" 2>&1
start control-plane "$out/control-plane" PORT="$cp_port" HOST=127.0.0.1 DATABASE_URL="$database_url" \
  CREDENTIALS_ENCRYPTION_KEYS="$key" INTERNAL_TOKEN_INGESTION="$token" \
  INTERNAL_TOKEN_DELIVERY_WEBHOOK="$webhook_token" node dist/main.js
start ingestion "$out/ingestion" PORT="$ing_port" METRICS_PORT="$ing_metrics_port" HOST=127.0.0.1 MANAGED_AUTH_ENABLED=true \
  CONTROL_PLANE_URL="http://127.0.0.1:$cp_port" INTERNAL_SERVICE_TOKEN="$token" \
  REDIS_URL="${REDIS_URL:-redis://127.0.0.1:6379}" node dist/main.js
start delivery-warehouse "$out/delivery" DELIVERY_HTTP_PORT="$wh_port" DELIVERY_HTTP_HOST=127.0.0.1 \
  WAREHOUSE_URL="$warehouse_url" DELIVERY_SESSION_TIMEOUT_MS=6000 node dist/main.js --destination warehouse
start delivery-webhook "$out/delivery" DELIVERY_HTTP_PORT="$fwd_port" DELIVERY_HTTP_HOST=127.0.0.1 \
  CONTROL_PLANE_URL="http://127.0.0.1:$cp_port" INTERNAL_SERVICE_TOKEN="$webhook_token" DELIVERY_SESSION_TIMEOUT_MS=6000 \
  node dist/main.js --destination webhook

check "control plane /health answers 200" healthy "http://127.0.0.1:$cp_port/health"
check "ingestion /health answers 200" healthy "http://127.0.0.1:$ing_port/health"
serves_console() { # url: the built console, index.html with the CSP and the bundle it names
  local index js
  index="$(curl -s -D "$logs/console-headers.txt" "$1/")" || return 1
  grep -qi "^content-security-policy: default-src 'none'; script-src 'self'" "$logs/console-headers.txt" || return 1
  js="$(grep -o 'src="\./[^"]*\.js"' <<<"$index" | sed 's/^src="\.\///; s/"$//')"
  [[ -n "$js" && "$(curl -s -o /dev/null -w '%{http_code}' "$1/$js")" == 200 ]]
}
check "the control plane serves the built console at /console/" serves_console "http://127.0.0.1:$cp_port/console"
check "delivery --destination warehouse /health answers 200" healthy "http://127.0.0.1:$wh_port/health"
check "delivery --destination webhook /health answers 200" healthy "http://127.0.0.1:$fwd_port/health"
# Tenant functions: isolated-vm's prebuilt native module and the sandbox host reached from the
# pruned layout, one function run in a forked sandbox.
check "a tenant function runs in the sandbox from the pruned install" \
  bash -c 'cd "$1" && node -e "
    const { createIsolatedVmRuntime } = require(\"@pipeline/functions\");
    const runtime = createIsolatedVmRuntime();
    runtime.run({ versionId: \"check\", code: \"export function transform(e) { return { ...e, seen: true }; }\" },
      [{ type: \"track\" }], { kind: \"destination\", writeKeyId: \"check\" })
      .then(async (run) => {
        await runtime.close();
        const ok = run.outcome === \"completed\" && run.results[0].result === \"ok\" && run.results[0].events[0].seen === true;
        if (!ok) { console.error(JSON.stringify(run)); process.exit(1); }
      });
  "' _ "$out/delivery" >"$logs/function-sandbox.log" 2>&1
check "the dead-letter CLI runs from the pruned install" \
  bash -c 'cd "$1" && node dist/dead-letters/main.js --help' _ "$out/delivery" >"$logs/dead-letters.log" 2>&1

stops_cleanly() { # name, pid: exit 0 on SIGTERM within SHUTDOWN_TIMEOUT_MS
  local name=$1 pid=$2 code
  kill -TERM "$pid" 2>/dev/null
  wait "$pid"
  code=$?
  [[ "$code" == 0 ]] || { echo "$name exited $code" >&2; tail -n 5 "$logs/$name.log" >&2; return 1; }
}
for entry in "${pids[@]}"; do check "${entry%%:*} stops cleanly on SIGTERM" stops_cleanly "${entry%%:*}" "${entry##*:}"; done

log "pruned installs: $failures failed checks in $((SECONDS - started))s (logs in ${logs#"$REPO/"})"
[[ "$failures" == 0 ]]
