# Sourced by the tools/ scripts: finds the repository and makes the pinned pnpm available.
# A fresh machine has Node and npm but maybe no pnpm; the version in package.json's
# packageManager field is installed into .cache/pnpm with npm, touching nothing global.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
export REPO
export NX_NO_CLOUD=true NX_DAEMON=false NX_TUI=false

log() { printf '\033[1m[%s]\033[0m %s\n' "$(basename "$0" .sh)" "$*" >&2; }

ensure_pnpm() {
  local want
  want="$(node -p "require('$REPO/package.json').packageManager.split('@')[1]")"
  if command -v pnpm >/dev/null 2>&1 && [[ "$(pnpm --version 2>/dev/null)" == "$want" ]]; then
    PNPM="$(command -v pnpm)"
  else
    PNPM="$REPO/.cache/pnpm/$want/node_modules/.bin/pnpm"
    if [[ ! -x "$PNPM" ]]; then
      log "installing pnpm $want into .cache/pnpm"
      npm install --silent --no-audit --no-fund --prefix "$REPO/.cache/pnpm/$want" "pnpm@$want" >/dev/null
    fi
  fi
  export PNPM
  export PATH="$(dirname "$PNPM"):$PATH"
}

install_dependencies() {
  ensure_pnpm
  log "installing dependencies (pnpm $("$PNPM" --version))"
  local frozen=--frozen-lockfile
  [[ -f "$REPO/pnpm-lock.yaml" ]] || frozen=
  (cd "$REPO" && "$PNPM" install $frozen --reporter=append-only | grep -vE '^(Progress|Packages):' || true)
  [[ -d "$REPO/node_modules/.pnpm" ]] || { log "pnpm install failed"; exit 1; }
}
