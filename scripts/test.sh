#!/usr/bin/env bash
# Runs every test. Starts the local stand-ins the tests need (each script
# installs what is missing), runs the suite with the race detector, and stops
# the services again whatever happened.
set -euo pipefail
cd "$(dirname "$0")/.."

source scripts/lib/services.sh
# Every service script there is: tests skip nothing.
names=()
for s in scripts/services/*.sh; do
  [ -e "$s" ] && names+=("$(basename "$s" .sh)")
done
echo "== npm packages and services"
use_services "${names[@]}"
echo "== chromium (the console's browser test)"
bash scripts/chromium.sh
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
