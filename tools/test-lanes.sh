#!/usr/bin/env bash
# The test command's jest projects: every project but delivery through nx, two at a time, and
# delivery beside them. Delivery's crash suites are four minutes of waiting for a consumer group
# to drop a SIGKILLed member (its 6 s session timeout, 32 times), little CPU; in nx's two lanes
# they held one lane while the other had the rest. Both halves run to the end; the step fails
# when either does. Sourced environment as tools/test.sh sets it.
source "$(dirname "${BASH_SOURCE[0]}")/lib/bootstrap.sh"
cd "$REPO"
"$PNPM" exec nx run-many -t test --exclude=@pipeline/delivery --output-style=stream &
rest=$!
"$PNPM" exec nx run-many -t test -p @pipeline/delivery --output-style=stream &
delivery=$!
status=0
wait "$rest" || status=1
wait "$delivery" || status=1
exit "$status"
