#!/usr/bin/env bash
# The reliability proof (docs/reliability.md): the crash, double-crash,
# racing-duplicate, redelivery, crash-during-redelivery, held-batch and
# dead-letter matrix of internal/chaos (every site: build tag chaos), on the
# memory stores and on the DSQL store (PostgreSQL) with the DynamoDB dedup
# store (DynamoDB Local), the tests that show the checks catch broken
# stores, then the mutants (scripts/mutants.sh). Starts the two services it
# needs and stops them on exit, like scripts/test.sh. The full log is in
# .run/chaos.log; docs/reliability.md's per-mode table is rewritten from the run
# (scripts/chaos-readme.sh); the last line printed is always
#
#   crash points: N, scenarios: M, runs: R, divergences: D, mutants killed: K/N
set -euo pipefail
cd "$(dirname "$0")/.."

source scripts/lib/services.sh
use_services postgres dynamodb
export AGENTSLICE_REQUIRE_SERVICES=1

mkdir -p .run
log=.run/chaos.log
summary=$(pwd)/.run/chaos-summary.txt
rm -f "$summary" .run/mutants.txt
echo "== go test -tags chaos ./internal/chaos (log: $log)"
set +e
AGENTSLICE_CHAOS_SUMMARY=$summary go test -tags chaos -count=1 -timeout 60m -v \
	-run '^(TestChaosFull|TestChecksCatchBrokenStores)$' ./internal/chaos/ >"$log" 2>&1
rc=$?
set -e
# Failures and divergences, if any, then the per-mode details.
grep -E '^\s*(--- FAIL|FAIL|panic:)|divergence: ' "$log" | head -40 || true
grep -E '^(ok|FAIL)\s' "$log" || true
if [[ ! -s $summary ]]; then
	echo "chaos.sh: the matrix did not finish; see $log" >&2
	tail -n 20 "$log" >&2
	echo "crash points: 0, scenarios: 0, runs: 0, divergences: unknown (the run failed), mutants killed: not run"
	exit 1
fi
head -n -1 "$summary"
echo "== mutants (scripts/mutants.sh)"
set +e
bash scripts/mutants.sh
mrc=$?
set -e
mutants=$(sed -n 's/^mutants killed: //p' .run/mutants.txt 2>/dev/null || true)
line="$(tail -n 1 "$summary"), mutants killed: ${mutants:-not run}"
if [[ $rc -eq 0 && $mrc -eq 0 ]]; then
	bash scripts/chaos-readme.sh "$summary" "$line"
fi
echo "$line"
[[ $rc -eq 0 && $mrc -eq 0 ]]
