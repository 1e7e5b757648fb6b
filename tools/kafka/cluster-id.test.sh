#!/usr/bin/env bash
# Kafka's storage is formatted whatever the cluster id begins with (an id beginning
# with '-' was read as an option about once in 64 first starts), and new ids never begin with
# '-' or '_'. Plain bash, run by tools/test.sh; needs Java and the Kafka jars (fetched once).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
kafka="$here/kafka.sh"
failures=0
checks=0
ok() { checks=$((checks + 1)); printf '[cluster-id] ok: %s\n' "$*"; }
fail() { checks=$((checks + 1)); printf '[cluster-id] FAIL: %s\n' "$*" >&2; failures=$((failures + 1)); }

# One process makes the 2,000 (a shell started per id took 30 s of the test command).
i=0
while IFS= read -r id; do
  i=$((i + 1))
  if [[ ! "$id" =~ ^[A-Za-z0-9][A-Za-z0-9_-]{21}$ ]]; then fail "new id $id (try $i)"; break; fi
done < <(bash "$kafka" cluster-id 2000)
((i == 2000)) || fail "asked for 2000 ids, read $i"
((failures == 0)) && ok "2000 new ids are 22 base64url characters, none beginning with - or _"

# The three formats (a JVM each) run at once, then are checked in order; the jars are fetched
# first, once, so the three never fetch them at the same time.
bash "$kafka" fetch >/dev/null
ids=("-$(bash "$kafka" cluster-id | cut -c2-)" "_$(bash "$kafka" cluster-id | cut -c2-)" "--$(bash "$kafka" cluster-id | cut -c3-)")
dirs=()
pids=()
for id in "${ids[@]}"; do
  dir="$(mktemp -d)"
  dirs+=("$dir")
  KAFKA_STATE_DIR="$dir" bash "$kafka" format "$id" 2>"$dir/err" &
  pids+=($!)
done
for n in "${!ids[@]}"; do
  id="${ids[$n]}" dir="${dirs[$n]}"
  if wait "${pids[$n]}" && grep -qx "cluster.id=$id" "$dir/data/meta.properties"; then
    ok "formatted with the cluster id $id"
  else
    fail "formatting with $id: $(tail -n 3 "$dir/err" 2>/dev/null)"
  fi
  rm -rf "$dir"
done
# Counted in the test command's summary beside the jest projects.
if [[ -n "${TEST_REPORT_DIR:-}" ]]; then
  mkdir -p "$TEST_REPORT_DIR"
  echo "{\"project\":\"kafka cluster id (bash)\",\"passed\":$((checks - failures)),\"failed\":$failures,\"skipped\":0}" \
    >"$TEST_REPORT_DIR/kafka-cluster-id.json"
fi
exit $((failures > 0))
