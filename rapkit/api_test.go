package rapkit

import (
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// TestAPIExposesNoInternalPackage type-checks this package from source and
// walks everything exported (functions, types, their exported fields and
// methods, constants, variables) collecting the packages of the named types
// it mentions. A program outside the module cannot name a type of an
// internal/ package, so none may appear: using one (say, retry.Backoff in a
// config field) fails here.
func TestAPIExposesNoInternalPackage(t *testing.T) {
	for _, dir := range []string{".", "rapkittest"} {
		t.Run(dir, func(t *testing.T) { checkAPI(t, dir) })
	}
}

func checkAPI(t *testing.T, dir string) {
	pkgs := exportedAPIPackages(t, dir)
	for _, p := range pkgs {
		if p == "internal" || strings.HasPrefix(p, "internal/") || strings.Contains(p, "/internal/") || strings.HasSuffix(p, "/internal") {
			t.Errorf("the exported API mentions a type of %s", p)
		}
	}
	// The walk must see the API at all: these are certainly in it.
	want := []string{"net/http", "context", "encoding/json", "log/slog", "time"}
	if dir != "." {
		want = []string{"time"}
	}
	for _, want := range want {
		if !contains(pkgs, want) {
			t.Errorf("the walk missed %s (found %v)", want, pkgs)
		}
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func exportedAPIPackages(t *testing.T, dir string) []string {
	t.Helper()
	fset := token.NewFileSet()
	names, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	var files []*ast.File
	for _, n := range names {
		if strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, n, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	// The imports are read from the compiler's export data, which go list
	// builds (or finds in the build cache).
	list := exec.Command("go", "list", "-export", "-deps", "-f", "{{.ImportPath}}={{.Export}}", ".")
	list.Dir = dir
	listed, err := list.Output()
	if err != nil {
		t.Fatalf("go list -export: %v", err)
	}
	exports := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(listed)), "\n") {
		if path, file, ok := strings.Cut(line, "="); ok && file != "" {
			exports[path] = file
		}
	}
	lookup := func(path string) (io.ReadCloser, error) {
		f, ok := exports[path]
		if !ok {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(f)
	}
	conf := types.Config{Importer: importer.ForCompiler(fset, "gc", lookup)}
	path := "github.com/agentslice/agentslice/rapkit"
	if dir != "." {
		path += "/" + dir
	}
	pkg, err := conf.Check(path, fset, files, nil)
	if err != nil {
		t.Fatalf("type-checking: %v", err)
	}
	seen := map[string]bool{}
	visited := map[types.Type]bool{}
	var walk func(types.Type)
	walk = func(typ types.Type) {
		if typ == nil || visited[typ] {
			return
		}
		visited[typ] = true
		switch tt := typ.(type) {
		case *types.Alias:
			walk(types.Unalias(tt))
		case *types.Named:
			if o := tt.Obj(); o.Pkg() != nil {
				seen[o.Pkg().Path()] = true
				if o.Pkg() != pkg {
					return // another package's internals are its own business
				}
			}
			walk(tt.Underlying())
			for i := 0; i < tt.NumMethods(); i++ {
				if m := tt.Method(i); m.Exported() {
					walk(m.Type())
				}
			}
		case *types.Pointer:
			walk(tt.Elem())
		case *types.Slice:
			walk(tt.Elem())
		case *types.Array:
			walk(tt.Elem())
		case *types.Map:
			walk(tt.Key())
			walk(tt.Elem())
		case *types.Chan:
			walk(tt.Elem())
		case *types.Signature:
			for _, tup := range []*types.Tuple{tt.Params(), tt.Results()} {
				for i := 0; i < tup.Len(); i++ {
					walk(tup.At(i).Type())
				}
			}
		case *types.Struct:
			for i := 0; i < tt.NumFields(); i++ {
				if f := tt.Field(i); f.Exported() || f.Embedded() {
					walk(f.Type())
				}
			}
		case *types.Interface:
			for i := 0; i < tt.NumMethods(); i++ {
				walk(tt.Method(i).Type())
			}
		}
	}
	scope := pkg.Scope()
	for _, name := range scope.Names() {
		if o := scope.Lookup(name); o.Exported() {
			walk(o.Type())
		}
	}
	out := make([]string, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// TestImportsOnlyRetryFromTheModule: a tool server importing rapkit pulls
// in none of agentslice's runtime, stores or cloud SDKs; of this module it
// uses only the backoff schedule.
func TestImportsOnlyRetryFromTheModule(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		if strings.HasPrefix(p, "github.com/agentslice/agentslice/") && p != "github.com/agentslice/agentslice/rapkit" &&
			p != "github.com/agentslice/agentslice/internal/retry" {
			t.Errorf("rapkit depends on %s", p)
		}
		if strings.HasPrefix(p, "github.com/aws/") || strings.HasPrefix(p, "github.com/jackc/") {
			t.Errorf("rapkit depends on %s", p)
		}
	}
}
