#!/usr/bin/env bash
# The local cloud test (make e2e): the real Lambda bootstraps of slicefn,
# rapreceiver and delayrelay under the AWS Lambda Runtime Interface Emulator,
# against fauxqs, DynamoDB Local and PostgreSQL (see e2e/doc.go).
#
#   scripts/e2e.sh            install aws-lambda-rie if missing, build the
#                             bootstraps, start the services (unless
#                             scripts/test.sh already did), run the test,
#                             stop what it started
#
# The emulator is installed into .run/bin (repo-local GOBIN); the bootstraps
# are built into .run/e2e/<function>/bootstrap for the host (the emulator
# runs them here; the deployment builds them for linux/arm64). Every
# function's output is written to .run/e2e/functions.log.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

RIE_VERSION=v0.0.0-20261030222936-bef5c4ba774d
export GOBIN="$ROOT/.run/bin"
RIE="$GOBIN/aws-lambda-rie"
OUT="$ROOT/.run/e2e"

if [[ ! -x $RIE || "$(cat "$GOBIN/.aws-lambda-rie-version" 2>/dev/null)" != "$RIE_VERSION" ]]; then
  echo "== installing aws-lambda-rie $RIE_VERSION into $GOBIN"
  mkdir -p "$GOBIN"
  go install "github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie@$RIE_VERSION"
  echo "$RIE_VERSION" >"$GOBIN/.aws-lambda-rie-version"
fi

echo "== building the bootstraps"
for fn in slicefn rapreceiver delayrelay; do
  mkdir -p "$OUT/$fn"
  CGO_ENABLED=0 go build -tags lambda.norpc -trimpath -o "$OUT/$fn/bootstrap" "./cmd/$fn"
done
# The standalone sandbox tool server (agentslice sandbox) for the coding
# turn of sandbox_test.go.
mkdir -p "$OUT/agentslice"
go build -trimpath -o "$OUT/agentslice/agentslice" ./cmd/agentslice
# The kill test's slice function: the same, plus the agentslice_faults tag
# (AGENTSLICE_FAULT_KILL makes it SIGKILL itself at a named crash point).
mkdir -p "$OUT/slicefn-faults"
CGO_ENABLED=0 go build -tags lambda.norpc,agentslice_faults -trimpath -o "$OUT/slicefn-faults/bootstrap" ./cmd/slicefn

# Services: reuse them when scripts/test.sh (or the caller) already started
# them and exported their variables; else start them here and stop them on
# exit.
if [[ -z ${AGENTSLICE_TEST_SQS_ENDPOINT:-} || -z ${AGENTSLICE_TEST_DYNAMODB_ENDPOINT:-} || -z ${AGENTSLICE_TEST_PG_DSN:-} ]]; then
  bash scripts/npm-deps.sh
  # up: something already listens where the service's variables point; then
  # it is left running at the end (another run or session uses it).
  up() {
    local hp
    hp=$(bash "$1" env | grep -oE '127\.0\.0\.1:[0-9]+' | head -n 1)
    [[ -n $hp ]] && (exec 3<>"/dev/tcp/${hp%:*}/${hp#*:}") 2>/dev/null
  }
  started=()
  cleanup() {
    for s in "${started[@]}"; do bash "$s" stop >/dev/null 2>&1 || true; done
  }
  trap cleanup EXIT
  for name in fauxqs dynamodb postgres; do
    s="scripts/services/$name.sh"
    if up "$s"; then
      echo "== $name is already running; using it"
    else
      echo "== starting $name"
      bash "$s" start
      started+=("$s")
    fi
    eval "$(bash "$s" env)"
  done
fi
export AGENTSLICE_REQUIRE_SERVICES=1
export AGENTSLICE_E2E_BIN="$OUT" AGENTSLICE_E2E_RIE="$RIE" AGENTSLICE_E2E_LOG="$OUT/functions.log"

echo "== go test -tags e2e ./e2e/..."
start=$(date +%s)
set +e
go test -tags e2e -count=1 -timeout 5m -v ./e2e/... 2>&1 | tee "$OUT/test.log" |
  grep --line-buffered -vE '^=== (RUN|PAUSE|CONT)'
status=${PIPESTATUS[0]}
set -e
echo "== e2e finished in $(($(date +%s) - start)) s (status $status; full output in $OUT/test.log, functions' output in $OUT/functions.log)"
exit "$status"
