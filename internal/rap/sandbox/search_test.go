package sandbox

import (
	"strconv"
	"strings"
	"testing"
)

func TestSearch(t *testing.T) {
	t.Parallel()
	r := newRig(t, testRepo(t), Config{})
	const th = "thr_find"
	r.call(t, th, nil, "write_file", map[string]any{"path": "calc/more.go", "content": "package calc\n\n// Add is tested elsewhere.\n"})
	r.call(t, th, nil, "write_file", map[string]any{"path": "calc/trace.log", "content": "func Add ignored\n"})
	if got := r.call(t, th, nil, "search", map[string]any{"pattern": "func Add|Add is"}).Text; got != "calc/calc.go:3:func Add(a, b int) int { return a - b }\ncalc/more.go:3:// Add is tested elsewhere.\n" {
		t.Fatalf("search = %q, want tracked and new files, not the ignored log", got)
	}
	if got := r.call(t, th, nil, "search", map[string]any{"pattern": "^package", "path": "calc", "glob": "m*.go"}).Text; got != "calc/more.go:1:package calc\n" {
		t.Fatalf("search with path and glob = %q", got)
	}
	if got := r.call(t, th, nil, "search", map[string]any{"pattern": "ONE", "ignore_case": true, "path": "calc/notes.txt"}).Text; got != "calc/notes.txt:1:one\ncalc/notes.txt:3:one\n" {
		t.Fatalf("ignore_case = %q", got)
	}
	mustContain(t, "no match", r.call(t, th, nil, "search", map[string]any{"pattern": "nowhere to be found"}).Text, "no matches")
	mustContain(t, "bad regexp", r.call(t, th, nil, "search", map[string]any{"pattern": "a("}).Text, "error: ", `searching for "a("`)
	mustContain(t, "outside", r.call(t, th, nil, "search", map[string]any{"pattern": "x", "path": "../.."}).Text, "error: ", "leaves the sandbox")

	var many strings.Builder
	for i := range 250 {
		many.WriteString("hit " + strconv.Itoa(i) + " " + strings.Repeat("é", 200) + "\n")
	}
	r.call(t, th, nil, "write_file", map[string]any{"path": "many.txt", "content": many.String()})
	got := r.call(t, th, nil, "search", map[string]any{"pattern": "^hit", "path": "many.txt"}).Text
	if strings.Count(got, "\n") != 201 || !strings.Contains(got, "[250 matches; the first 200 shown") || !strings.Contains(got, " [line cut]") || strings.Contains(got, "\uFFFD") {
		t.Fatalf("capped search: %d lines\n%.400s", strings.Count(got, "\n"), got)
	}
}
