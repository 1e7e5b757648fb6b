#!/usr/bin/env bash
# The monitoring files under deploy/monitoring: promtool checks the alert rules and runs their
# unit tests (alerts.test.yaml), then check-monitoring.mjs checks that every pipeline_* series
# the rules and the dashboard read is one the services export, and that every runbook link
# names a section of docs/operations.md. Run by tools/test.sh.
source "$(dirname "${BASH_SOURCE[0]}")/../lib/bootstrap.sh"
cd "$REPO"
ensure_promtool
promtool check rules deploy/monitoring/alerts.yaml
(cd deploy/monitoring && promtool test rules alerts.test.yaml)
node tools/monitoring/check-monitoring.mjs
