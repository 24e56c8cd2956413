#!/usr/bin/env bash
# make loadtest-cost: the cost model (agentslice cost, docs/cost.md) fed the
# figures measured on this machine:
#   - the storage load test (loadtest/storage, THREADS threads, default
#     1000) on PostgreSQL and DynamoDB Local: requests per slice, checked
#     against the model's code-path counts, and the bytes each load and
#     commit read and wrote against its DSQL estimate (the command fails if
#     they disagree); the round trips and thread row bytes are then used as
#     its inputs;
#   - the density benchmark (loadtest/density, unique profile, DENSITY_AGENTS
#     agents, default 2000): the conventional design's bytes per waiting
#     agent and the history bytes per turn.
# The services: the exported AGENTSLICE_TEST_PG_DSN and
# AGENTSLICE_TEST_DYNAMODB_ENDPOINT if both are set (left running), else
# started here and stopped on exit. If the storage load test cannot run,
# the model's code-path counts are used and the output says so. Extra
# arguments go to agentslice cost (e.g. -agents 10000 -workload FILE).
set -euo pipefail
cd "$(dirname "$0")/.."

out=loadtest/results
mkdir -p "$out"
if [[ -z "${AGENTSLICE_TEST_PG_DSN:-}" || -z "${AGENTSLICE_TEST_DYNAMODB_ENDPOINT:-}" ]]; then
  source scripts/lib/services.sh
  use_services postgres dynamodb || echo "== could not start the services"
fi

measured=()
echo "== storage load test: ${THREADS:-1000} threads"
if go run ./loadtest/storage -threads "${THREADS:-1000}" -out "$out" >"$out/storage.log" 2>&1; then
  grep -E '^(completions|slice latency|store calls|round trips|DSQL bytes|failures) ' "$out/storage.log" || true
  measured+=(-storage-result "$out/storage.json")
else
  echo "== the storage load test did not run (see $out/storage.log); requests per slice below are the model's"
  echo "   code-path counts, which the test measured as 2.00 SQL + 2.00 DynamoDB per slice in docs/reliability.md"
fi

agents="${DENSITY_AGENTS:-2000}"
echo "== density benchmark: unique profile, $agents agents (one core)"
GOMAXPROCS=1 go run ./loadtest/density -profile unique -agents "$agents" -progress=false -out "$out" >"$out/density-cost.log" 2>&1 \
  || { cat "$out/density-cost.log"; exit 1; }
grep '^# conventional' "$out/density-cost.log" || true
measured+=(-density-result "$out/density-unique-$agents.json")

echo
go run ./cmd/agentslice cost "${measured[@]}" "$@"
