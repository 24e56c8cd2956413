#!/usr/bin/env bash
# Mutation testing as a standing measure (`make mutation`, not part of
# `make test`): go-gremlins/gremlins mutates internal/runtime, internal/local
# and internal/disk one change at a time (conditionals, arithmetic,
# increments, negations) and runs, as the oracle, the package's own unit
# tests and then the sampled chaos matrix with a fixed seed (the memory
# stores; the disk store for internal/disk): scripts/mutation/go wraps the
# go command for that. Prints per package
#
#   mutation score <pkg>: K/(K+L) = P% (killed K, lived L of which H hung and T timed out, not covered N)
#
# hangs and timeouts counted as lived. A hang is a phase of the oracle (unit
# tests, matrix) whose test binary ran past its deadline:
# max(MUTATION_DEADLINE_FLOOR (180 s), MUTATION_DEADLINE_COEFFICIENT (3) x
# that phase's time in the uncached coverage run), builds left out
# (scripts/mutation/go; listed in .run/mutation-<pkg>.hangs). Timed out is
# gremlins' own limit, a backstop at MUTATION_GREMLINS_COEFFICIENT (10) x
# the coverage run, builds included. CPU heavy: hours for the three packages
# on two cores. Arguments name the packages (default: the three); GREMLINS_FLAGS
# adds flags (say, -E 'regexp' to leave files out, --workers 1);
# MUTATION_SAMPLE=K runs one mutant in K (scripts/mutation/go), an estimate
# in a fraction of the time, MUTATION_SAMPLE_OFFSET which one;
# MUTATION_RUN=NAME names a run's files (two runs over parts of a package).
# Results: .run/mutation-<pkg>.json; the last lines printed are the scores.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
version=v0.6.0
mkdir -p .run/bin
# Installed once per machine (it reports its version as "dev": the stamp
# file says which one is there).
if [[ ! -x .run/bin/gremlins || $(cat .run/bin/gremlins.version 2>/dev/null) != "$version" ]]; then
	echo "== go install github.com/go-gremlins/gremlins/cmd/gremlins@$version"
	GOBIN=$root/.run/bin go install "github.com/go-gremlins/gremlins/cmd/gremlins@$version"
	echo "$version" >.run/bin/gremlins.version
fi
pkgs=("$@")
if [[ ${#pkgs[@]} -eq 0 ]]; then
	pkgs=(internal/runtime internal/local internal/disk)
fi
export MUTATION_REAL_GO MUTATION_ROOT=$root
MUTATION_REAL_GO=$(command -v go)
read -r -a flags <<<"${GREMLINS_FLAGS:-}"
scores=()
for pkg in "${pkgs[@]}"; do
	name=${pkg//\//-}${MUTATION_RUN:+-$MUTATION_RUN}
	out=$root/.run/mutation-$name.json
	log=$root/.run/mutation-$name.log
	rm -f "$out"
	export MUTATION_COUNTER=$root/.run/mutation-$name.count MUTATION_SKIPPED=$root/.run/mutation-$name.skipped
	export MUTATION_ORACLE_TIMES=$root/.run/mutation-$name.times MUTATION_HANGS=$root/.run/mutation-$name.hangs
	rm -f "$MUTATION_COUNTER" "$MUTATION_SKIPPED" "$MUTATION_ORACLE_TIMES" "$MUTATION_HANGS"
	touch "$MUTATION_SKIPPED" "$MUTATION_HANGS"
	export MUTATION_PKG=github.com/agentslice/agentslice/$pkg
	export MUTATION_CHAOS_RUN='^TestChaosFull$/^memory$'
	if [[ $pkg == internal/disk ]]; then
		export MUTATION_CHAOS_RUN='^TestChaosFull$/^disk$'
	fi
	echo "== gremlins unleash $pkg (oracle: its tests, then chaos -run $MUTATION_CHAOS_RUN)"
	# Test helpers and the planted mutants' switch are not mutated.
	# gremlins runs from the module's root, on the package's directory.
	(PATH=$root/scripts/mutation:$PATH "$root/.run/bin/gremlins" unleash \
		--coverpkg "$MUTATION_PKG" --workers 1 --test-cpu 0 --timeout-coefficient "${MUTATION_GREMLINS_COEFFICIENT:-10}" \
		-E '_test\.go$' -E 'storetest/' -E 'runtimetest/' -E 'mutants(_on|_off)?\.go$' \
		-o "$out" "${flags[@]}" "./$pkg" 2>&1 | tee "$log") || true
	if [[ -s $MUTATION_ORACLE_TIMES ]]; then
		echo "== oracle times of the uncached coverage run (s): $(tr '\n' ' ' <"$MUTATION_ORACLE_TIMES")"
	fi
	if [[ -s $MUTATION_HANGS ]]; then
		echo "== hangs (mutated line, phase, deadline):"
		cat "$MUTATION_HANGS"
	fi
	scores+=("$(python3 - "$pkg" "$out" "$log" "$MUTATION_SKIPPED" "${MUTATION_SAMPLE:-1}" "$MUTATION_HANGS" <<'PY'
import json, os, re, sys
pkg, path, log, skipped, every, hangs = sys.argv[1:7]
if os.path.exists(path) and os.path.getsize(path) > 0:
    d = json.load(open(path))
    st = [m["status"] for f in d.get("files", []) for m in f.get("mutations", [])]
    note = ""
else:
    # Stopped before the end (gremlins writes its JSON last): count
    # the mutants its log reports as run so far.
    st = re.findall(r"^\s*(KILLED|LIVED|TIMED OUT|NOT COVERED|NOT VIABLE) \S+ at ", open(log).read(), re.M)
    note = ", partial: from the log of an unfinished run"
k = st.count("KILLED")
t = sum(1 for s in st if s.replace("_", " ") == "TIMED OUT")
l = st.count("LIVED") + t
h = len(open(hangs).read().splitlines())
n = st.count("NOT COVERED")
skip = len(open(skipped).read().split())
if int(every) > 1:
    note += f", sample: 1 mutant in {every}, {skip} left out"
score = f"{100 * k / (k + l):.1f}%" if k + l else "n/a"
print(f"mutation score {pkg}: {k}/{k + l} = {score} (killed {k}, lived {l} of which {h} hung and {t} timed out, not covered {n}{note})")
PY
)")
done
printf '%s\n' "${scores[@]}"
