#!/bin/sh
# Writes docker/.env, which Compose reads for `-f docker/compose.yaml`: a random value for every
# secret docker/compose.yaml requires (each ${NAME:?...} in it), so the file itself holds none
# and no two installations share one. A name already in the file keeps its value (PostgreSQL
# keeps the password its volume was created with); missing ones are added. Run it again after
# compose.yaml asks for a new secret. Usage: sh docker/generate-secrets.sh [output file]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
compose="$here/compose.yaml"
out="${1:-$here/.env}"

hex() { od -An -v -tx1 -N"$1" /dev/urandom | tr -d ' \n'; }

umask 077
touch "$out"
chmod 600 "$out"
names=$(grep -v '^[[:space:]]*#' "$compose" | grep -o '\${[A-Z][A-Z0-9_]*:?' | sed 's/^\${//; s/:?$//' | sort -u)
added=0
for name in $names; do
  if grep -q "^$name=" "$out"; then continue; fi
  case "$name" in
    # keyId:base64(32 random bytes), the form CREDENTIALS_ENCRYPTION_KEYS reads.
    *_KEYS) value="compose1:$(head -c 32 /dev/urandom | base64 | tr -d '\n')" ;;
    # Hex: safe inside a postgres:// URL and 64 characters (tokens need 32+).
    *) value=$(hex 32) ;;
  esac
  printf '%s=%s\n' "$name" "$value" >>"$out"
  added=$((added + 1))
done
echo "$out: $added added; compose.yaml requires $(echo "$names" | wc -w | tr -d ' '): $(echo $names)"
