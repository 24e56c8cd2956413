package runtime_test

import (
	"go/ast"
	"path/filepath"
	"strings"
	"testing"
)

// The planted mutants stay off the engine's main path: only the hooks in
// mutants*.go read chaosmutant, and the engine calls those hooks.
func TestMutantsOnlyInHooks(t *testing.T) {
	src := readDraftSource(t)
	seen := 0
	for name, fd := range src.funcs {
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok && id.Name == "chaosmutant" {
				seen++
				pos := src.fset.Position(id.Pos())
				if !strings.HasPrefix(filepath.Base(pos.Filename), "mutants") {
					t.Errorf("%s: %s reads chaosmutant; plant the mutant through a hook in mutants.go", pos, name)
				}
			}
			return true
		})
	}
	if seen == 0 {
		t.Fatal("no function reads chaosmutant: the check reads nothing")
	}
}
