package chaos

import (
	"fmt"
	"slices"
	"strings"
)

// modeNames describes each mode in docs/reliability.md's table, in table order.
var modeNames = []struct{ mode, what string }{
	{"reference", "crash-free run (vs. the golden snapshot and the memory stores)"},
	{"crash", "killed once, at every boundary"},
	{"double-crash", "killed twice, the second time 1–8 (memory) / 1–2 (real stores) passages later"},
	{"race", "racing duplicate slice, same batch"},
	{"race-greedy", "racing duplicate slice, larger batch"},
	{"race-superset", "one message per slice; racing duplicate carries it and the mail behind it"},
	{"redelivery", "every message 2–3 times, reordered"},
	{"crash+redelivery", "killed at every boundary during redelivery"},
	{"crash+held", "killed after a commit; batch redelivered with the mail that arrived meanwhile"},
	{"dead-letter", "killed after a commit; dead-lettered after 3 receives, thread goes on, redriven"},
	{"system-crash", "killed at every boundary on the embedded `local.System`"},
}

// Note adds a line to Details (how the matrix was sampled, say).
func (rep *Report) Note(s string) {
	rep.mu.Lock()
	defer rep.mu.Unlock()
	rep.notes = append(rep.notes, s)
}

// Runs returns how many runs were counted.
func (rep *Report) Runs() int {
	rep.mu.Lock()
	defer rep.mu.Unlock()
	return rep.runs
}

// Markdown renders the counted runs per mode and backend, and the runs
// not counted, as docs/reliability.md's table (scripts/chaos.sh puts it there).
func (rep *Report) Markdown() string {
	rep.mu.Lock()
	defer rep.mu.Unlock()
	counts := map[string]map[string]int{} // mode -> backend -> runs
	var backends []string
	add := func(key string, n int, skipped bool) {
		mode, backend, _ := strings.Cut(key, "/")
		if skipped {
			backend = "not counted"
		} else if !slices.Contains(backends, backend) {
			backends = append(backends, backend)
		}
		if counts[mode] == nil {
			counts[mode] = map[string]int{}
		}
		counts[mode][backend] += n
	}
	for k, n := range rep.modes {
		add(k, n, false)
	}
	for k, n := range rep.skipped {
		add(k, n, true)
	}
	slices.SortFunc(backends, func(a, b string) int {
		if (a == "memory") != (b == "memory") {
			if a == "memory" {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	cols := append(backends, "not counted")
	var b strings.Builder
	b.WriteString("| mode | " + strings.Join(cols, " | ") + " |\n|---|" + strings.Repeat("---|", len(cols)) + "\n")
	row := func(name string, c map[string]int) {
		b.WriteString("| " + name + " |")
		for _, col := range cols {
			fmt.Fprintf(&b, " %s |", thousands(c[col]))
		}
		b.WriteString("\n")
	}
	seen := map[string]bool{}
	for _, m := range modeNames {
		if c, ok := counts[m.mode]; ok {
			row(m.what, c)
			seen[m.mode] = true
		}
	}
	var rest []string
	for m := range counts {
		if !seen[m] {
			rest = append(rest, m)
		}
	}
	slices.Sort(rest)
	for _, m := range rest {
		row(m, counts[m])
	}
	return b.String()
}

// thousands formats n with comma separators.
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
