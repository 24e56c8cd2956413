#!/usr/bin/env bash
# Runs every fuzz target in the repository (each `func FuzzXxx` in a _test.go
# file) for FUZZTIME (default 10s) each, one after the other, and ends with a
# line counting targets and failures. New fuzz targets are picked up without
# editing this script. A failing input is written by `go test` under the
# package's testdata/fuzz/FuzzXxx/, where it stays as a regression seed.
#
#   FUZZTIME=1m scripts/fuzz.sh
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZTIME=${FUZZTIME:-10s}

targets=$(grep -rHo --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*' internal cmd loadtest 2>/dev/null | sort -u || true)
if [[ -z $targets ]]; then
	echo "fuzz.sh: no fuzz targets found" >&2
	exit 1
fi
n=0
failed=()
while IFS= read -r line; do
	file=${line%%:*}
	name=${line##*func }
	pkg=./$(dirname "$file")
	n=$((n + 1))
	echo "== $name ($pkg, $FUZZTIME)"
	if ! go test -run '^$' -fuzz "^${name}\$" -fuzztime "$FUZZTIME" "$pkg"; then
		failed+=("$name ($pkg)")
	fi
done <<<"$targets"
for f in "${failed[@]}"; do
	echo "FAILED: $f"
done
echo "fuzz targets: $n, failed: ${#failed[@]}"
[[ ${#failed[@]} -eq 0 ]]
