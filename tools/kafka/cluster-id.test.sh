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

for i in $(seq 1 2000); do
  id="$(bash "$kafka" cluster-id)"
  if [[ ! "$id" =~ ^[A-Za-z0-9][A-Za-z0-9_-]{21}$ ]]; then fail "new id $id (try $i)"; break; fi
done
((failures == 0)) && ok "2000 new ids are 22 base64url characters, none beginning with - or _"

for id in "-$(bash "$kafka" cluster-id | cut -c2-)" "_$(bash "$kafka" cluster-id | cut -c2-)" "--$(bash "$kafka" cluster-id | cut -c3-)"; do
  dir="$(mktemp -d)"
  if KAFKA_STATE_DIR="$dir" bash "$kafka" format "$id" 2>"$dir/err" \
    && grep -qx "cluster.id=$id" "$dir/data/meta.properties"; then
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
