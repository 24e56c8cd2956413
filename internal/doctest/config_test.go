package doctest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// configName is one thing the configuration page must name.
type configName struct{ kind, name string }

var envLiteral = regexp.MustCompile(`"((?:AGENTSLICE|OTEL)_[A-Z0-9_]+)"`)

// configNames returns what docs/configuration.md must name, read from the
// code under root: every AGENTSLICE_* and OTEL_* variable a non-test Go
// file spells out, the CDK app's context keys (the ctx* constants of
// cmd/cdkapp/config.go) and the stack's props (the fields of
// internal/stack's StackProps).
func configNames(root string) ([]configName, error) {
	var names []configName
	add := func(kind, name string) {
		if n := (configName{kind, name}); !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	err := goFiles(root, func(p string) error {
		if strings.HasSuffix(p, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range envLiteral.FindAllStringSubmatch(string(b), -1) {
			add("variable", m[1])
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	if f, err := parser.ParseFile(fset, filepath.Join(root, "cmd", "cdkapp", "config.go"), nil, 0); err == nil {
		ast.Inspect(f, func(n ast.Node) bool {
			if vs, ok := n.(*ast.ValueSpec); ok {
				for i, id := range vs.Names {
					if strings.HasPrefix(id.Name, "ctx") && i < len(vs.Values) {
						if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
							v, _ := strconv.Unquote(lit.Value)
							add("context key", v)
						}
					}
				}
			}
			return true
		})
	} else if !os.IsNotExist(err) {
		return nil, err
	}
	if f, err := parser.ParseFile(fset, filepath.Join(root, "internal", "stack", "props.go"), nil, 0); err == nil {
		ast.Inspect(f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok || ts.Name.Name != "StackProps" {
				return true
			}
			if st, ok := ts.Type.(*ast.StructType); ok {
				for _, fl := range st.Fields.List {
					for _, id := range fl.Names {
						if id.IsExported() {
							add("prop", id.Name)
						}
					}
				}
			}
			return false
		})
	} else if !os.IsNotExist(err) {
		return nil, err
	}
	return names, nil
}

// undocumented returns the names of configNames that page does not spell
// out in backticks.
func undocumented(root string, page []byte) ([]string, error) {
	names, err := configNames(root)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range names {
		if !strings.Contains(string(page), "`"+n.name+"`") {
			out = append(out, n.kind+" "+n.name)
		}
	}
	return out, nil
}

// TestConfigurationReference: docs/configuration.md names every
// environment variable the code reads, every context key of the CDK app and
// every prop of the stack, so the reference cannot drift from the code.
func TestConfigurationReference(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	page, err := os.ReadFile(filepath.Join(root, "docs", "configuration.md"))
	if err != nil {
		t.Fatal(err)
	}
	names, err := configNames(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(names) < 40 {
		t.Fatalf("found only %d names in the code: %v", len(names), names)
	}
	missing, err := undocumented(root, page)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range missing {
		t.Errorf("docs/configuration.md does not document the %s (write it as `name`)", m)
	}
}

// TestUndocumentedFindsDrift: a variable in a Go file, a context key and a
// prop the page lacks are reported; test files and testdata are not read.
func TestUndocumentedFindsDrift(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write(t, dir, "a/a.go", "package a\nconst x, y = \"AGENTSLICE_ONE\", \"OTEL_TWO\"\n")
	write(t, dir, "a/a_test.go", "package a\nconst z = \"AGENTSLICE_IN_A_TEST\"\n")
	write(t, dir, "a/testdata/t.go", "package t\nconst z = \"AGENTSLICE_IN_TESTDATA\"\n")
	write(t, dir, "cmd/cdkapp/config.go", "package main\nconst (\n\tctxA = \"keyA\"\n\tctxB = \"keyB\" // comment\n\tother = \"notAKey\"\n)\n")
	write(t, dir, "internal/stack/props.go", "package stack\ntype StackProps struct {\n\tEmbedded\n\tFoo string\n\tBar, Baz int\n\tquiet bool\n}\n")
	page := "`AGENTSLICE_ONE` `keyA` `Foo` `Bar` AGENTSLICE_ONE_MORE"
	got, err := undocumented(dir, []byte(page))
	if err != nil {
		t.Fatal(err)
	}
	want := "variable OTEL_TWO;context key keyB;prop Baz"
	if strings.Join(got, ";") != want {
		t.Errorf("got  %s\nwant %s", strings.Join(got, ";"), want)
	}
}
