#!/usr/bin/env bash
# Installs the npm packages the tests run (package-lock.json, exact versions)
# when node_modules is missing or was installed from another lock file.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$ROOT/.run"
if ! command -v npm >/dev/null; then
  echo "npm-deps.sh: installing Node.js and npm" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
fi
want=$(sha256sum "$ROOT/package-lock.json" | cut -d' ' -f1)
stamp="$ROOT/node_modules/.agentslice-lock-sha256"
if [ -d "$ROOT/node_modules" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
  exit 0
fi
echo "npm-deps.sh: npm ci" >&2
(flock 9 && cd "$ROOT" && npm ci --no-audit --no-fund --loglevel=error >&2 && echo "$want" > "$stamp") 9>"$ROOT/.run/npm.lock"
