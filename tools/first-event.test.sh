#!/usr/bin/env bash
# Runs README's "Your first event" as printed, against the dev stack (tools/dev.sh): the shell
# blocks of that section, in one shell session, in order. Checks that step 1 makes the keys,
# step 2's event is accepted, step 3's psql line prints the event's row, step 4's page (served
# by step 4's own command) sends events from a localhost origin in headless Chromium that
# reach the warehouse, and step 5's API reference and API call and step 6's console answer.
# Then, in the same shell, the examples of docs/ that continue it: a destination
# (management-api.md), a batch (tracking-api.md) and a task read over MCP (tasks-and-mcp.md).
# Last, the stack is started again with its local secrets made anew (a second clone on the same
# database): the default warehouse is sealed again and one more event lands.
#
# The README's ports are used unless overridden (a developer's own stack may hold them):
# FIRST_EVENT_CONTROL_PLANE_PORT (3000), FIRST_EVENT_INGESTION_PORT (3001),
# FIRST_EVENT_PAGE_PORT (8000), FIRST_EVENT_DELIVERY_PORT (14600, not printed). An override
# replaces the printed port in the blocks before they run. Likewise the printed warehouse URL
# (postgres://postgres@127.0.0.1:5432/warehouse) becomes WAREHOUSE_URL when that is set, as
# tools/test.sh sets it for its throwaway PostgreSQL. Every wait is bounded.
source "$(dirname "${BASH_SOURCE[0]}")/lib/bootstrap.sh"
cd "$REPO"

cp_port="${FIRST_EVENT_CONTROL_PLANE_PORT:-3000}"
ing_port="${FIRST_EVENT_INGESTION_PORT:-3001}"
page_port="${FIRST_EVENT_PAGE_PORT:-8000}"
delivery_port="${FIRST_EVENT_DELIVERY_PORT:-14600}"
work="$REPO/.reports/first-event"
out="$work/stack.log"
rm -rf "$work"
mkdir -p "$work/blocks"
source "$REPO/tools/lib/checks.sh"

# The blocks, as printed; the ports replaced only when overridden. The examples of the docs
# pages that continue README's shell come after its steps.
node tools/docs/readme-blocks.mjs README.md "Your first event" "$work/blocks" >/dev/null
node tools/docs/readme-blocks.mjs docs/management-api.md "Connect a destination" "$work/blocks/destination" >/dev/null
node tools/docs/readme-blocks.mjs docs/tracking-api.md "Events" "$work/blocks/events" >/dev/null
node tools/docs/readme-blocks.mjs docs/tasks-and-mcp.md "A first task" "$work/blocks/task" >/dev/null
printed_warehouse='postgres://postgres@127.0.0.1:5432/warehouse'
warehouse_url="${WAREHOUSE_URL:-$printed_warehouse}"
grep -qF "psql $printed_warehouse " README.md || { log "README's psql line no longer names $printed_warehouse"; exit 1; }
for block in "$work/blocks"/*.sh "$work/blocks"/*/*.sh; do
  sed -i -e "s#127\.0\.0\.1:3000#127.0.0.1:$cp_port#g" -e "s#127\.0\.0\.1:3001#127.0.0.1:$ing_port#g" \
    -e "s#http\.server 8000#http.server $page_port#g" -e "s#serve -l 8000#serve -l $page_port#g" \
    -e "s#psql $printed_warehouse #psql $warehouse_url #g" "$block"
done
block_with() { grep -l -- "$1" "$work/blocks"/*.sh | head -n 1; }
keys_block="$(block_with 'write-keys create')"
collect_block="$(block_with '/collect')"
psql_block="$(block_with 'psql ')"
page_block="$(block_with 'index.html')"
serve_block="$(block_with 'http.server')"
api_block="$(block_with 'Authorization: Bearer')"
for name in keys_block collect_block psql_block page_block serve_block api_block; do
  [[ -n "${!name}" ]] || { log "README's \"Your first event\" has no block for $name"; exit 1; }
done

started=$SECONDS
# Its own local secrets, made anew by dev.sh, never the developer's .cache/dev-secrets.env: on
# the test command's database, which the stack smoke test's stack filled with another key,
# this is already the "second clone" start; the end of this test wipes them and starts again.
secrets_file="$work/dev-secrets.env"
start_stack() { # log file
  DEV_SECRETS_FILE="$secrets_file" DEV_RESTART_CRASHED=0 CONTROL_PLANE_PORT=$cp_port INGESTION_PORT=$ing_port \
    DELIVERY_HTTP_PORT_BASE=$delivery_port LOG_FORMAT=json setsid bash tools/dev.sh >"$1" 2>&1 </dev/null &
  leader=$!
}
start_stack "$out"
server=
stop_all() {
  [[ -n "$server" ]] && kill -TERM "$server" 2>/dev/null
  kill -INT -- "-$leader" 2>/dev/null || return 0
  local deadline=$((SECONDS + 30))
  while kill -0 "$leader" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.25; done
  pkill -KILL -s "$leader" 2>/dev/null || true
}
trap stop_all EXIT

stack_up() {
  grep -q 'Stack is up' "$out" && grep -q '"message":"delivering"' "$out" && return 0
  kill -0 "$leader" 2>/dev/null || return 2
  return 1
}
check "the dev stack came up" until_true 180 stack_up
if ((failures > 0)); then # nothing else can pass; say why at once
  log "stack output (last 40 lines of $out):"
  tail -n 40 "$out" >&2
  end_checks first-event "first event (README)"
fi
log "stack up after $((SECONDS - started))s"

# Step 1 runs in this shell, as in the reader's: its variables are the later steps' input.
# shellcheck source=/dev/null
step1() { source "$keys_block" >"$work/step1.out" 2>&1 && [[ "${WRITE_KEY:-}" == wk_* && -n "${API_KEY:-}" && -n "${ACCOUNT_ID:-}" ]]; }
check "step 1 makes an account, an API key and a write key" step1
step2() {
  # shellcheck source=/dev/null
  source "$collect_block" >"$work/step2.out" 2>&1 && grep -q '"ok":true' "$work/step2.out"
}
check "step 2's curl is accepted" step2
# Step 3 prints the row once the warehouse consumer has loaded it; a reader runs it again.
row_printed() { # patterns...
  # shellcheck source=/dev/null
  source "$psql_block" >"$work/step3.out" 2>&1 || return 1
  local pattern # extended regular expressions, each matched on one line
  for pattern in "$@"; do grep -qE -- "$pattern" "$work/step3.out" || return 1; done
}
check "step 3's psql line prints the event's row (Signed Up, visitor-1, plan pro)" \
  until_true 30 row_printed 'track +\| Signed Up +\| visitor-1 +\| \{"plan": "pro"\}'

step4_page() {
  # shellcheck source=/dev/null
  source "$page_block" >"$work/step4.out" 2>&1 && grep -q '<script' /tmp/first-page/index.html &&
    grep -qF "$WRITE_KEY" /tmp/first-page/index.html
}
check "step 4 makes the page with the snippet and the write key" step4_page
serve_page() {
  # shellcheck source=/dev/null
  source "$serve_block" </dev/null && server="${PAGE_SERVER:-}" && [[ -n "$server" ]]
}
check "step 4's server command starts in the background and names its pid" serve_page
check "step 4's server serves the page on port $page_port" until_true 15 curl -fsS -o /dev/null "http://localhost:$page_port/"
origin_accepted() {
  local status
  status="$(curl -s -o "$work/origin.out" -w '%{http_code}' "http://127.0.0.1:$ing_port/collect" \
    -H "Origin: http://localhost:$page_port" -H "X-Write-Key: $WRITE_KEY" -H 'Content-Type: application/json' \
    -d '{"type":"track","event":"Origin Check","messageId":"origin-check","anonymousId":"visitor-2","timestamp":"2026-01-15T10:00:00Z"}')"
  [[ "$status" == 202 ]] || { echo "POST /collect with Origin http://localhost:$page_port answered $status: $(cat "$work/origin.out")" >&2; return 1; }
}
check "the write key accepts Origin: http://localhost:$page_port" origin_accepted
check "headless Chromium loads the page, clicks the button, and the SDK's requests are accepted" \
  node tools/docs/first-event-browser.mjs "http://localhost:$page_port/"
check "step 3's psql line then prints the page's page event and its Button Clicked event" \
  until_true 30 row_printed '^ *page +\|' 'track +\| Button Clicked +\|.*"color": "green"'

# Read whole before grep: under pipefail, the curl that `grep -q` stops reading would fail it.
docs_page() { local page; page="$(curl -fsS "http://127.0.0.1:$cp_port/docs/")" && grep -q 'swagger' <<<"$page"; }
check "step 5's API reference answers at /docs" docs_page
step5() {
  # shellcheck source=/dev/null
  source "$api_block" >"$work/step5.out" 2>&1 && grep -q '"data"' "$work/step5.out" && grep -q '"name":"website"' "$work/step5.out"
}
check "step 5's curl lists the write key with the API key" step5
console_page() { # step 6: the console's page with its CSP, and the bundle it names
  local index js
  index="$(curl -fsSL -D "$work/console-headers.txt" "http://127.0.0.1:$cp_port/console")" || return 1
  grep -qi "^content-security-policy: default-src 'none'" "$work/console-headers.txt" || return 1
  js="$(grep -o 'src="\./[^"]*\.js"' <<<"$index" | sed 's/^src="\.\///; s/"$//')"
  [[ -n "$js" ]] && curl -fsS -o /dev/null "http://127.0.0.1:$cp_port/console/$js"
}
check "step 6's console answers at /console" console_page

# docs/management-api.md, "Connect a destination": a web_tracking app, an Amplitude app, and
# the integration that joins them.
destination() {
  # shellcheck source=/dev/null
  source "$work/blocks/destination/1.sh" >"$work/destination.out" 2>&1 &&
    [[ "${SITE_APP:-}" =~ ^[0-9a-f-]{36}$ && "${AMPLITUDE_APP:-}" =~ ^[0-9a-f-]{36}$ ]] &&
    grep -q '"destinationAppType":"amplitude"' "$work/destination.out"
}
check "docs/management-api.md's \"Connect a destination\" makes both apps and the integration" destination
# docs/tracking-api.md, "Events": a batch of an identify and a page event.
events_batch() {
  # shellcheck source=/dev/null
  source "$work/blocks/events/1.sh" >"$work/events.out" 2>&1 && grep -q '"received":2' "$work/events.out"
}
check "docs/tracking-api.md's batch example is accepted" events_batch
check "step 3's psql line then prints that batch's page event" until_true 30 row_printed '^ *page +\| +\| a-1 +\|'
# docs/tasks-and-mcp.md, "A first task": a freshness check started, its report read over MCP.
first_task() {
  # shellcheck source=/dev/null
  source "$work/blocks/task/1.sh" >"$work/task.out" 2>&1 && [[ "${TASK_ID:-}" =~ ^[0-9a-f-]{36}$ ]] &&
    grep -q '"tasks_get"\|"result"' "$work/task.out"
}
check "docs/tasks-and-mcp.md's \"A first task\" creates and starts a task, and tasks_get answers" first_task
task_succeeded() {
  curl -s "http://127.0.0.1:$cp_port/mcp" -H "Authorization: Bearer $API_KEY" -H 'Content-Type: application/json' \
    -H 'Accept: application/json, text/event-stream' \
    -d "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"tasks_get\",\"arguments\":{\"task_id\":\"$TASK_ID\"}}}" |
    grep -q 'status\\": \\"succeeded'
}
check "that task's run succeeds" until_true 30 task_succeeded

# The local secrets wiped (a second clone, a cleared .cache) and the stack started again on the
# same database: the default warehouse is sealed again from WAREHOUSE_URL and the next event lands.
stop_all
server= # stopped with the stack; the second stop_all must not signal it again
rm -f "$secrets_file"
out="$work/stack-again.log"
start_stack "$out"
check "the dev stack came up again with its secrets made anew" until_true 180 stack_up
resealed() { grep -q 'sealed again from WAREHOUSE_URL' "$out"; }
check "the control plane sealed the default warehouse again from WAREHOUSE_URL" resealed
after_restart() {
  local status
  status="$(curl -s -o "$work/after-restart.out" -w '%{http_code}' "http://127.0.0.1:$ing_port/collect" \
    -H "X-Write-Key: $WRITE_KEY" -H 'Origin: http://localhost' -H 'Content-Type: application/json' \
    -d '{"type":"track","event":"After Restart","messageId":"after-restart","anonymousId":"visitor-3","timestamp":"2026-01-15T11:00:00Z"}')"
  [[ "$status" == 202 ]]
}
check "an event sent after the restart is accepted" after_restart
check "step 3's psql line then prints that event" until_true 30 row_printed 'track +\| After Restart +\| visitor-3 +\|'
# The Amplitude app of "Connect a destination" was sealed with the wiped key: said once, with the fix.
told_once() {
  [[ "$(grep -c '"message":"stored credentials cannot be opened"' "$out")" == 1 ]] &&
    grep '"message":"stored credentials cannot be opened"' "$out" | grep "\"appIds\":\[[^]]*\"$AMPLITUDE_APP\"" |
    grep -q '"fix":"stored credentials are sealed with key dev1'
}
check "the app sealed with the wiped key is logged once, by id, with the fix" told_once

stop_all
trap - EXIT
log "took $((SECONDS - started))s"
if ((failures > 0)); then
  for f in "$work"/*.out; do [[ -f "$f" ]] && { log "$(basename "$f"):"; cat "$f" >&2; echo >&2; }; done
  log "stack output (last 40 lines of $out):"
  tail -n 40 "$out" >&2
fi
end_checks first-event "first event (README)"
