package doctest

import (
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// packageRows returns the paths named in the first column of the
// "## Packages" table of a design page: each `path` of the cell (a cell may
// name several), in order.
func packageRows(md []byte) []string {
	var out []string
	in := false
	cell := regexp.MustCompile("`([^`]+)`")
	for _, line := range strings.Split(string(md), "\n") {
		switch {
		case strings.HasPrefix(line, "## "):
			in = strings.HasPrefix(line, "## Packages")
		case in && strings.HasPrefix(line, "| `"):
			first := strings.SplitN(strings.TrimPrefix(line, "|"), "|", 2)[0]
			for _, m := range cell.FindAllStringSubmatch(first, -1) {
				out = append(out, m[1])
			}
		}
	}
	return out
}

// goFiles calls visit with the path of every .go file under root, leaving
// out testdata, node_modules, bin and hidden directories.
func goFiles(root string, visit func(path string) error) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if p != root && (name == "testdata" || name == "node_modules" || name == "bin" || strings.HasPrefix(name, ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(name, ".go") {
			return visit(p)
		}
		return nil
	})
}

// goPackageDirs returns the directories under root (slash-separated,
// relative) that hold .go files (goFiles).
func goPackageDirs(root string) ([]string, error) {
	var dirs []string
	err := goFiles(root, func(p string) error {
		rel, _ := filepath.Rel(root, filepath.Dir(p))
		if rel = filepath.ToSlash(rel); !slices.Contains(dirs, rel) {
			dirs = append(dirs, rel)
		}
		return nil
	})
	return dirs, err
}

// covered reports whether the table's paths cover dir: named exactly,
// matched by a pattern ("cmd/*", "loadtest/*" matches one level and what
// is under it), or a test kit of a covered package (a directory whose name
// ends in "test" inside one: internal/rap/raptest is internal/rap's).
func covered(rows []string, dir string) bool {
	for _, r := range rows {
		if r == dir {
			return true
		}
		if strings.HasSuffix(r, "/*") && strings.HasPrefix(dir, strings.TrimSuffix(r, "*")) {
			return true
		}
	}
	if parent := path.Dir(dir); parent != "." && strings.HasSuffix(path.Base(dir), "test") {
		return covered(rows, parent)
	}
	return false
}

// tableProblems compares a design page's package table with a tree: each
// Go package must be covered by a row, each row must name a directory that
// exists (a pattern: one that has entries).
func tableProblems(root string, md []byte) ([]string, error) {
	rows := packageRows(md)
	if len(rows) == 0 {
		return []string{"no package table (a \"## Packages\" section with rows | `path` | ... |)"}, nil
	}
	dirs, err := goPackageDirs(root)
	if err != nil {
		return nil, err
	}
	var probs []string
	for _, d := range dirs {
		if d != "." && !covered(rows, d) {
			probs = append(probs, d+": a Go package the table does not list")
		}
	}
	for _, r := range rows {
		p := filepath.Join(root, filepath.FromSlash(strings.TrimSuffix(r, "/*")))
		if fi, err := os.Stat(p); err != nil || !fi.IsDir() {
			probs = append(probs, r+": listed in the table but not a directory of the tree")
		}
	}
	return probs, nil
}

// TestDesignPackageTable: docs/design.md's package table matches the tree:
// every Go package is in it and every path it names exists.
func TestDesignPackageTable(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	md, err := os.ReadFile(filepath.Join(root, "docs", "design.md"))
	if err != nil {
		t.Fatal(err)
	}
	probs, err := tableProblems(root, md)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range probs {
		t.Error("docs/design.md, ## Packages: " + p)
	}
}

// TestTableProblemsFindsDrift: a package the table omits and a row naming
// no directory are both reported; patterns and test kits count as covered.
func TestTableProblemsFindsDrift(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, f := range []string{"a/a.go", "a/atest/k.go", "b/b.go", "cmd/x/main.go", "cmd/y/main.go", "a/testdata/z/z.go", "sdk/py/x.py"} {
		write(t, dir, f, "package x\n")
	}
	md := "# D\n\n## Packages\n\n| path | owns |\n|---|---|\n| `a` | a |\n| `cmd/*` | binaries |\n| `sdk/py`, `gone` | py |\n\n## Next\n\n| `b` | not the table |\n"
	probs, err := tableProblems(dir, []byte(md))
	if err != nil {
		t.Fatal(err)
	}
	want := "b: a Go package the table does not list\ngone: listed in the table but not a directory of the tree"
	if got := strings.Join(probs, "\n"); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
