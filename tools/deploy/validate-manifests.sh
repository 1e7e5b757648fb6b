#!/usr/bin/env bash
# Renders and validates deploy/ (see validate-manifests.mjs). Needs the workspace built.
source "$(dirname "${BASH_SOURCE[0]}")/../lib/bootstrap.sh"
cd "$REPO"
ensure_kubectl
log "rendering with $("$KUBECTL" version --client 2>/dev/null | head -n 1)"
exec node tools/deploy/validate-manifests.mjs
