package sandbox

import (
	"context"
	"os"
	"path/filepath"
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

// TestSearchBackendsAgree runs ripgrep and the Go search on one sandbox
// (nested .gitignore files, a tracked file the rules ignore, hidden,
// binary, symlinked, new and deleted files, a/x beside a-b/y) and
// requires the same answer from both, for patterns, paths and globs;
// some answers are spelled out, so both agreeing on a wrong one fails.
func TestSearchBackendsAgree(t *testing.T) {
	t.Parallel()
	rg := findRipgrep()
	if rg == "" {
		if os.Getenv("AGENTSLICE_REQUIRE_SERVICES") == "1" {
			t.Fatal("rg is not on PATH (scripts/ripgrep.sh installs Debian's ripgrep)")
		}
		t.Skip("rg is not on PATH (scripts/ripgrep.sh installs Debian's ripgrep)")
	}
	repo := testRepo(t)
	write(t, repo, "calc-2/sum.go", "package calc2\n\nfunc Add() {}\n")
	write(t, repo, "cmd/tool/main.go", "package main\n\nfunc main() { Add() }\n")
	write(t, repo, "cmd/.gitignore", "gen/\n")
	write(t, repo, ".github/ci.yml", "run: go test # Add\n")
	write(t, repo, "forced.log", "Add in a tracked file the rules ignore\n")
	gitOut(t, repo, "add", "calc-2", "cmd", ".github")
	gitOut(t, repo, "add", "-f", "forced.log")
	gitOut(t, repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "more")
	r := newRig(t, repo, Config{Jail: JailOff})
	const th = "thr_backends"
	r.call(t, th, nil, "write_file", map[string]any{"path": "calc/new.go", "content": "package calc\n\n// Add, new\nfunc add2() {}\n"})
	sb := r.mustBox(t, th)
	write(t, sb.Dir, "cmd/gen/out.go", "Add generated, ignored\n")
	write(t, sb.Dir, "run.log", "Add in a log\n")
	if err := os.WriteFile(filepath.Join(sb.Dir, "blob.bin"), []byte("Add\x00binary"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(sb.Dir, "calc", "calc.go"), filepath.Join(sb.Dir, "link.go")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(sb.Dir, "calc-2", "sum.go")); err != nil {
		t.Fatal(err)
	}
	write(t, sb.Dir, "calc-2/other.go", "package calc2 // Add\n")

	for _, tc := range []struct {
		s    searchArgs
		want string // "" when only the agreement is checked
	}{
		{searchArgs{pattern: "Add"}, ".github/ci.yml:1:run: go test # Add\n" +
			"calc/calc.go:3:func Add(a, b int) int { return a - b }\ncalc/new.go:3:// Add, new\n" +
			"calc-2/other.go:1:package calc2 // Add\ncmd/tool/main.go:3:func main() { Add() }\n"},
		{searchArgs{pattern: "add", ignoreCase: true}, ""},
		{searchArgs{pattern: `^func \w+\(`}, ""},
		{searchArgs{pattern: "Add", glob: "*.go"}, "calc/calc.go:3:func Add(a, b int) int { return a - b }\ncalc/new.go:3:// Add, new\n" +
			"calc-2/other.go:1:package calc2 // Add\ncmd/tool/main.go:3:func main() { Add() }\n"},
		{searchArgs{pattern: "Add", glob: "cmd/**/*.go"}, "cmd/tool/main.go:3:func main() { Add() }\n"},
		{searchArgs{pattern: "Add", glob: "calc/*.go"}, "calc/calc.go:3:func Add(a, b int) int { return a - b }\ncalc/new.go:3:// Add, new\n"},
		{searchArgs{pattern: "Add", glob: "n?w.go"}, "calc/new.go:3:// Add, new\n"},
		{searchArgs{pattern: "package", spec: "calc"}, "calc/calc.go:1:package calc\ncalc/new.go:1:package calc\n"},
		{searchArgs{pattern: "package", spec: "calc", glob: "[c]*.go"}, "calc/calc.go:1:package calc\n"},
		{searchArgs{pattern: "one", spec: "calc/notes.txt"}, "calc/notes.txt:1:one\ncalc/notes.txt:3:one\n"},
		{searchArgs{pattern: "binary|generated|in a log|rules ignore"}, "no matches"},
	} {
		want := func(found []match, total int, err error) string {
			if err != nil {
				t.Fatalf("%+v: %v", tc.s, err)
			}
			return renderMatches(found, total)
		}
		viaRg := want(ripgrep(context.Background(), rg, sb.Dir, tc.s))
		viaGo := want(goSearch(context.Background(), sb.Dir, tc.s))
		if viaRg != viaGo {
			t.Errorf("%+v: ripgrep answers\n%s\nthe Go search\n%s", tc.s, viaRg, viaGo)
		}
		if tc.want != "" && viaGo != tc.want {
			t.Errorf("%+v: both answer\n%s\nwant\n%s", tc.s, viaGo, tc.want)
		}
		if viaGo == "no matches" && tc.want != "no matches" {
			t.Errorf("%+v: no matches", tc.s)
		}
	}
}
