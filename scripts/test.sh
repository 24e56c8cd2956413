#!/usr/bin/env bash
# Runs every test. Starts the local stand-ins the tests need (each script
# installs what is missing), runs the suite with the race detector, and stops
# the services again whatever happened.
set -euo pipefail
cd "$(dirname "$0")/.."

services=()
for s in scripts/services/*.sh; do
  [ -e "$s" ] && services+=("$s")
done

cleanup() {
  for s in "${services[@]}"; do bash "$s" stop >/dev/null 2>&1 || true; done
}
trap cleanup EXIT

echo "== npm packages"
bash scripts/npm-deps.sh

for s in "${services[@]}"; do
  echo "== starting $(basename "$s" .sh)"
  bash "$s" start
  eval "$(bash "$s" env)"
done
export AGENTSLICE_REQUIRE_SERVICES=1

echo "== go vet"
go vet ./...
echo "== go test -race"
go test -race -count=1 ./...

# ---------------------------------------------------------------------------
# Local cloud test: the real Lambda bootstraps (slicefn, rapreceiver,
# delayrelay) under the AWS Lambda Runtime Interface Emulator, against the
# services started above (scripts/e2e.sh reuses them because their variables
# are exported).
# ---------------------------------------------------------------------------
echo "== e2e (scripts/e2e.sh)"
bash scripts/e2e.sh
