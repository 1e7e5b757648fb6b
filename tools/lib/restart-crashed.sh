#!/usr/bin/env bash
# Keeps one process of the dev stack running: when it crashes (exits non-zero without being
# asked to stop), it is started again after a growing delay (1 s, doubling up to 30 s; back to
# 1 s after a minute of running), and the output says so plainly. SIGTERM or SIGINT is passed
# to the process and ends the loop with its exit code.
#   restart-crashed.sh <name> <command> [args...]
name=$1
shift
delay=1
child=
stopping=0
stop() {
  stopping=1
  if [[ -n "$child" ]]; then kill -TERM "$child" 2>/dev/null || true; fi
}
trap stop TERM INT
while :; do
  started=$SECONDS
  "$@" &
  child=$!
  rc=0
  wait "$child" || rc=$?
  # A trapped signal ends `wait` early: wait until the process itself has exited.
  while kill -0 "$child" 2>/dev/null; do rc=0; wait "$child" || rc=$?; done
  child=
  if ((stopping || rc == 0)); then exit "$rc"; fi
  if ((SECONDS - started >= 60)); then delay=1; fi
  printf '[dev] %s crashed (exit code %s); restarting it in %ss. The control plane and ingestion keep running.\n' \
    "$name" "$rc" "$delay" >&2
  sleep "$delay" &
  wait $! || true
  if ((stopping)); then exit 143; fi
  delay=$((delay * 2 > 30 ? 30 : delay * 2))
done
