package doctest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// pagesRun returns the pages this package's tests run, read from its test
// files: every ".md" string literal passed to runPage or runPath.
func pagesRun(dir string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil {
		return nil, err
	}
	var pages []string
	fset := token.NewFileSet()
	for _, f := range files {
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			return nil, err
		}
		ast.Inspect(file, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			if id, ok := call.Fun.(*ast.Ident); !ok || (id.Name != "runPage" && id.Name != "runPath") {
				return true
			}
			for _, a := range call.Args {
				ast.Inspect(a, func(n ast.Node) bool {
					if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
						if v, _ := strconv.Unquote(lit.Value); strings.HasSuffix(v, ".md") && !slices.Contains(pages, v) {
							pages = append(pages, v)
						}
					}
					return true
				})
			}
			return true
		})
	}
	return pages, nil
}

// markdownPages returns README.md and every .md file under docs/ (slash
// paths relative to root), leaving out node_modules.
func markdownPages(root string) ([]string, error) {
	pages := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "node_modules" {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			rel, _ := filepath.Rel(root, p)
			pages = append(pages, filepath.ToSlash(rel))
		}
		return nil
	})
	return pages, err
}

// blockProblems returns the shell blocks of pages (under root) that would
// run in no test: on a page no test runs, a block not marked as skipped;
// anywhere, a "doctest: skip" mark that gives no reason.
func blockProblems(root string, pages, run []string) ([]string, error) {
	var probs []string
	for _, page := range pages {
		md, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(page)))
		if err != nil {
			return nil, err
		}
		for _, b := range ShellBlocks(md) {
			switch {
			case b.Skip == "" && !slices.Contains(run, page):
				probs = append(probs, page+":"+strconv.Itoa(b.Line)+": no test runs this page's shell blocks: run it (runPage in internal/doctest) or mark the block <!-- doctest: skip (why) --> or <!-- aws -->")
			case b.Skip != "" && strings.HasPrefix(b.Skip, "marked") && b.Why == "":
				probs = append(probs, page+":"+strconv.Itoa(b.Line)+": <!-- doctest: skip --> without a reason: say why, <!-- doctest: skip (why) -->")
			}
		}
	}
	return probs, nil
}

// TestEveryShellBlockRunsOrSaysWhy: every shell block of the README and
// of docs/ either runs in a test of this package (its page is passed to
// runPage or runPath) or is marked as not run, with a reason.
func TestEveryShellBlockRunsOrSaysWhy(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	run, err := pagesRun(".")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(run, "docs/getting-started.md") || !slices.Contains(run, "README.md") {
		t.Fatalf("the tests run only %v; the newcomer's path (README.md, docs/getting-started.md) is not among them", run)
	}
	pages, err := markdownPages(root)
	if err != nil {
		t.Fatal(err)
	}
	probs, err := blockProblems(root, pages, run)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range probs {
		t.Error(p)
	}
}

// TestBlockProblemsFindsUnrunBlocks: a shell block on a page no test runs
// and a skip without a reason are reported; a run page, an AWS block, a
// skip with a reason and a text block are not.
func TestBlockProblemsFindsUnrunBlocks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write(t, dir, "run.md", "```sh\necho run\n```\n")
	write(t, dir, "other.md", "```sh\necho never\n```\n\n<!-- aws -->\n```sh\ncdk deploy\n```\n\n"+
		"<!-- doctest: skip (opens a browser) -->\n```sh\nxdg-open x\n```\n\n<!-- doctest: skip -->\n```sh\necho why\n```\n\n```text\nout\n```\n")
	probs, err := blockProblems(dir, []string{"run.md", "other.md"}, []string{"run.md"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range probs {
		got = append(got, strings.SplitN(p, " ", 2)[0])
	}
	if want := "other.md:1:;other.md:16:"; strings.Join(got, ";") != want {
		t.Errorf("got %v, want %s\n%s", got, want, strings.Join(probs, "\n"))
	}
}
