#!/usr/bin/env bash
# The mutant check (docs/reliability.md): builds the chaos tests once
# with the `mutants` build tag and runs the memory matrix of `make chaos`
# (TestMutant) once per deliberate bug listed in internal/runtime/mutants.go.
# The matrix must catch each one. Needs no service. Prints one line per
# mutant, then
#
#   mutants killed: K/N
#
# and fails unless K = N. The line is also written to .run/mutants.txt.
# Arguments, if any, name the mutants to run (default: all).
set -euo pipefail
cd "$(dirname "$0")/.."

mkdir -p .run
bin=$(pwd)/.run/chaos-mutants.test
log=$(pwd)/.run/mutants.log
out=$(pwd)/.run/mutants.txt
rm -f "$out"
: >"$log"
go test -c -tags mutants -o "$bin" ./internal/chaos/
mapfile -t mutants < <(sed -n 's/^\s*Mutant[A-Za-z]* *Mutant = "\([a-z_]*\)"$/\1/p' internal/runtime/mutants.go)
if [[ $# -gt 0 ]]; then
	mutants=("$@")
fi
if [[ ${#mutants[@]} -eq 0 ]]; then
	echo "mutants.sh: found no mutant in internal/runtime/mutants.go" >&2
	exit 1
fi
killed=0
for m in "${mutants[@]}"; do
	result=$(mktemp)
	# The golden snapshots are read relative to the package directory.
	(cd internal/chaos && AGENTSLICE_MUTANT=$m AGENTSLICE_MUTANT_RESULT=$result \
		"$bin" -test.run '^TestMutant$' -test.count=1 -test.v -test.timeout 20m >>"$log" 2>&1) && rc=0 || rc=$?
	line=$(cat "$result" 2>/dev/null || true)
	rm -f "$result"
	if [[ $rc -eq 0 && $line == *": killed "* ]]; then
		killed=$((killed + 1))
		echo "$line"
	else
		echo "${line:-mutant $m: the test failed to run (see $log)}"
	fi
done
echo "mutants killed: $killed/${#mutants[@]}" | tee "$out"
[[ $killed -eq ${#mutants[@]} ]]
