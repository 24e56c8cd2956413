#!/usr/bin/env bash
# Rewrites docs/reliability.md's chaos figures from a summary file written by
# TestChaosFull (AGENTSLICE_CHAOS_SUMMARY): the per-mode table between the
# markers <!-- chaos-table:begin --> and <!-- chaos-table:end -->, and the
# summary line (LINE, default the summary's last line) between
# <!-- chaos-line:begin --> and <!-- chaos-line:end -->. scripts/chaos.sh
# calls it after a clean full run and mutant check; never typed by hand.
set -euo pipefail
cd "$(dirname "$0")/.."
summary=${1:?usage: chaos-readme.sh SUMMARY_FILE [LINE]}
table=$(grep '^|' "$summary")
line=${2:-$(tail -n 1 "$summary")}
evidence=$(sed -n 's/^recovery evidence: //p' "$summary")
python3 - docs/reliability.md "$table" "$line" "$evidence" <<'PY'
import re, sys
path, table, line, evidence = sys.argv[1:5]
s = open(path).read()
def put(name, body):
    global s
    pat = re.compile(r"(<!-- %s:begin -->\n).*?(<!-- %s:end -->)" % (name, name), re.S)
    if not pat.search(s):
        sys.exit("chaos-readme.sh: docs/reliability.md has no %s markers" % name)
    s = pat.sub(lambda m: m.group(1) + body + "\n" + m.group(2), s)
put("chaos-table", table)
put("chaos-line", "    " + line + "\n\nRecovery evidence from the same run: " + evidence + ".")
open(path, "w").write(s)
PY
