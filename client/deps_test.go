package client

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImportsNoInternalPackage: the client is public; it must build for
// programs outside this module, so it imports no internal/ package.
func TestImportsNoInternalPackage(t *testing.T) {
	files, _ := filepath.Glob("*.go")
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, im := range af.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			if strings.Contains(p, "/internal/") || strings.HasPrefix(p, "internal/") {
				t.Errorf("%s imports %s", f, p)
			}
		}
	}
	if len(files) < 2 {
		t.Fatalf("found %d files", len(files))
	}
}
