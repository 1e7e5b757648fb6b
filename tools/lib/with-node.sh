#!/usr/bin/env bash
# Runs a command on the Node of .node-version (installed into .cache/node first when missing).
# package.json's scripts start node through it: `pnpm <script>` from a shell whose PATH has
# another Node would otherwise run the benches, the CLI and the checks on that one.
source "$(dirname "${BASH_SOURCE[0]}")/bootstrap.sh"
exec "$@"
