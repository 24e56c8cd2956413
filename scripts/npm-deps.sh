#!/usr/bin/env bash
# Installs the npm packages the tests run (package-lock.json, exact versions;
# and sdk/typescript's) when node_modules is missing or was installed from
# another lock file. With arguments, only those directories (relative to the
# repository root): scripts/peers-deps.sh passes loadtest/peers.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$ROOT/.run"
if ! command -v npm >/dev/null; then
  echo "npm-deps.sh: installing Node.js and npm" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
fi
# install DIR: npm ci in DIR unless its node_modules was installed from
# the same lock file (a stamp holds the lock's hash), so a second run needs no
# network.
install() {
  local dir=$1
  local want stamp rel
  want=$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1)
  stamp="$dir/node_modules/.agentslice-lock-sha256"
  if [ -d "$dir/node_modules" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
    return 0
  fi
  rel=${dir#"$ROOT"}
  rel=${rel#/}
  echo "npm-deps.sh: npm ci in ${rel:-.}" >&2
  (flock 9 && cd "$dir" && npm ci --prefer-offline --no-audit --no-fund --loglevel=error >&2 && echo "$want" > "$stamp") 9>"$ROOT/.run/npm.lock"
}
if [ $# -gt 0 ]; then
  for d in "$@"; do install "$ROOT/$d"; done
  exit 0
fi
install "$ROOT"
# The TypeScript SDK's packages: ajv, and tsc for its type check (sdk/typescript/package-lock.json).
install "$ROOT/sdk/typescript"
