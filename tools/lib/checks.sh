#!/usr/bin/env bash
# The shell tests' checks, sourced after bootstrap.sh: `check` runs one and says ok or FAILED,
# counting both; `until_true` waits for a condition, never longer than it is told; `end_checks`
# writes the count where the test command's summary reads it and exits.
checks=0
failures=0

check() { # description, command...
  local what=$1
  shift
  checks=$((checks + 1))
  if "$@"; then log "ok: $what"; else log "FAILED: $what"; failures=$((failures + 1)); fi
}

# Polls a command until it succeeds: at most $1 seconds, every 0.25 s. Exit status 2 means
# "will never succeed" and ends the wait at once.
until_true() {
  local deadline=$((SECONDS + $1)) status
  shift
  while true; do
    status=0
    "$@" || status=$?
    ((status == 0)) && return 0
    ((status != 2 && SECONDS < deadline)) || return 1
    sleep 0.25
  done
}

# Writes .reports/jest/<name>.json for tools/test-report/summarize.js, then exits: 1 when a
# check failed.
end_checks() { # name, project
  mkdir -p "$REPO/.reports/jest"
  echo "{\"project\":\"$2\",\"passed\":$((checks - failures)),\"failed\":$failures,\"skipped\":0}" >"$REPO/.reports/jest/$1.json"
  exit $((failures > 0))
}
