package runtime_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// The slice's draft is committed only when it is marked dirty (draft.go),
// so a change nobody marks is silently not committed. These checks read
// the package's source and fail when:
//   - a function other than changed (which sets it) or commit (which
//     clears it) assigns to dirty;
//   - a function other than addOutbox and dropOutbox assigns to the
//     outbox (s.st.Outbox);
//   - a slice method writes the draft (a field of the working state s.st,
//     s.inputs or s.children) without reaching changed through the slice
//     methods it calls. This is per method, not per path: it catches a
//     mutator that never marks, not one that marks on another branch.
//
// draftWriters lists the methods that write the draft without marking it,
// each with its reason.
var draftWriters = map[string]string{
	"commit":   "it writes the committed state back and clears dirty",
	"begin":    "the loaded state, and a new root thread's class and incarnation, committed with its first items",
	"run":      "it points inputs at the slice's own buffer, before anything is folded",
	"recycle":  "it zeroes the whole slice",
	"newSlice": "it sets up an empty slice",
}

type draftSource struct {
	fset  *token.FileSet
	funcs map[string]*ast.FuncDecl // slice methods and functions, by name
}

func readDraftSource(t *testing.T) draftSource {
	t.Helper()
	src := draftSource{fset: token.NewFileSet(), funcs: map[string]*ast.FuncDecl{}}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		text, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(src.fset, name, text, 0)
		if err != nil {
			t.Fatal(err)
		}
		if f.Name.Name != "runtime" {
			continue
		}
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Body != nil && (fd.Recv == nil || isSliceRecv(fd)) {
				src.funcs[fd.Name.Name] = fd
			}
		}
	}
	if src.funcs["changed"] == nil || src.funcs["addOutbox"] == nil {
		t.Fatal("draft.go's changed or addOutbox not found: the check reads nothing")
	}
	return src
}

func isSliceRecv(fd *ast.FuncDecl) bool {
	star, ok := fd.Recv.List[0].Type.(*ast.StarExpr)
	if !ok {
		return false
	}
	id, ok := star.X.(*ast.Ident)
	return ok && id.Name == "slice"
}

// recvName is the name a slice method calls its receiver ("" if none).
func recvName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List[0].Names) == 0 {
		return ""
	}
	return fd.Recv.List[0].Names[0].Name
}

// selPath spells a selector chain ("s.st.Outbox"), or "" when its root is
// not a name (an index, a call).
func selPath(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		if x := selPath(e.X); x != "" {
			return x + "." + e.Sel.Name
		}
	case *ast.IndexExpr:
		return selPath(e.X)
	case *ast.StarExpr:
		return selPath(e.X)
	}
	return ""
}

// assigned lists what fd assigns to, as selector paths.
func assigned(fd *ast.FuncDecl) []string {
	var out []string
	ast.Inspect(fd.Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			for _, l := range n.Lhs {
				out = append(out, selPath(l))
			}
		case *ast.IncDecStmt:
			out = append(out, selPath(n.X))
		}
		return true
	})
	return out
}

func TestOnlyChangedSetsDirty(t *testing.T) {
	src := readDraftSource(t)
	for name, fd := range src.funcs {
		for _, a := range assigned(fd) {
			field := a[strings.LastIndex(a, ".")+1:]
			if field == "dirty" && name != "changed" && name != "commit" {
				t.Errorf("%s: %s assigns %s; mark the draft with s.changed() (draft.go)", src.fset.Position(fd.Pos()), name, a)
			}
			if strings.HasSuffix(a, ".st.Outbox") && name != "addOutbox" && name != "dropOutbox" {
				t.Errorf("%s: %s assigns %s; use s.addOutbox or s.dropOutbox (draft.go)", src.fset.Position(fd.Pos()), name, a)
			}
		}
	}
}

func TestDraftWritersMark(t *testing.T) {
	src := readDraftSource(t)
	// calls[f] is the slice methods f calls on its receiver.
	calls := map[string][]string{}
	for name, fd := range src.funcs {
		r := recvName(fd)
		if r == "" {
			continue
		}
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			if c, ok := n.(*ast.CallExpr); ok {
				if sel, ok := c.Fun.(*ast.SelectorExpr); ok {
					if id, ok := sel.X.(*ast.Ident); ok && id.Name == r {
						calls[name] = append(calls[name], sel.Sel.Name)
					}
				}
			}
			return true
		})
	}
	marks := map[string]bool{"changed": true}
	for grew := true; grew; {
		grew = false
		for f, cs := range calls {
			for _, c := range cs {
				if marks[c] && !marks[f] {
					marks[f], grew = true, true
				}
			}
		}
	}
	var bad []string
	for name, fd := range src.funcs {
		r := recvName(fd)
		if r == "" || marks[name] || draftWriters[name] != "" {
			continue
		}
		for _, a := range assigned(fd) {
			if strings.HasPrefix(a, r+".st.") || a == r+".inputs" || a == r+".children" {
				bad = append(bad, src.fset.Position(fd.Pos()).String()+": "+name+" writes "+a+" but never marks the draft (s.changed, draft.go)")
				break
			}
		}
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Error(b)
	}
	for name := range draftWriters {
		if src.funcs[name] == nil {
			t.Errorf("draftWriters names %s, which no longer exists", name)
		}
	}
}
