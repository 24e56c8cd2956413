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
echo "== tmux (the terminal UI's test)"
bash scripts/tmux.sh
echo "== bubblewrap (the sandbox's jail for run_command)"
bash scripts/bwrap.sh
echo "== ripgrep (the sandbox's search backend)"
bash scripts/ripgrep.sh
export AGENTSLICE_REQUIRE_SERVICES=1

echo "== python sdk (sdk/python: unittest, standard library only)"
# The Go test internal/server TestServePythonSDK runs the same package
# against a real serve (the example tool server and the serve client).
(cd sdk/python && PYTHONDONTWRITEBYTECODE=1 python3 -m unittest discover -s tests -t .)

echo "== TypeScript SDK (tsc --noEmit and node --test in sdk/typescript)"
(cd sdk/typescript && npm run --silent typecheck && npm test --silent)
echo "== go vet"
go vet ./...
echo "== go test -race"
# The sampled chaos matrix (internal/chaos TestChaosFull) writes its summary
# line here; it is printed after the run, pass or fail.
mkdir -p .run
chaos_summary=$(pwd)/.run/chaos-sampled.txt
rm -f "$chaos_summary"
rc=0
# The terminal UI's test keeps its screens there (one folder per test).
export AGENTSLICE_ARTIFACTS=$(pwd)/.run/artifacts
rm -rf "$AGENTSLICE_ARTIFACTS"
# -timeout 30m: the sampled chaos matrix (27 scenarios) takes 6-8 minutes
# under the race detector on a quiet 2-core machine, near go test's default
# 10-minute limit per package; CI's own limit is 90 minutes for everything.
AGENTSLICE_CHAOS_SUMMARY=$chaos_summary go test -race -count=1 -timeout 30m ./... || rc=$?
echo "== screens of the terminal UI's test: $AGENTSLICE_ARTIFACTS"
echo "== sampled chaos matrix: $(tail -n 1 "$chaos_summary" 2>/dev/null || echo 'no summary (did not run)')"
[[ $rc -eq 0 ]] || exit $rc

# ---------------------------------------------------------------------------
# Local cloud test: the real Lambda bootstraps (slicefn, rapreceiver,
# delayrelay) under the AWS Lambda Runtime Interface Emulator, against the
# services started above (scripts/e2e.sh reuses them because their variables
# are exported).
# ---------------------------------------------------------------------------
echo "== e2e (scripts/e2e.sh)"
bash scripts/e2e.sh
