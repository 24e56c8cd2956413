package tui

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImportsOnlyTheClient: the UI is a client like any other: of this
// module it imports only the public client package, never the engine,
// the stores or the server, and no HTTP code of its own.
func TestImportsOnlyTheClient(t *testing.T) {
	files, _ := filepath.Glob("*.go")
	n := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		n++
		af, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, im := range af.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			if (strings.HasPrefix(p, "github.com/agentslice/agentslice/") && p != "github.com/agentslice/agentslice/client") || p == "net/http" {
				t.Errorf("%s imports %s", f, p)
			}
		}
	}
	if n < 4 {
		t.Fatalf("found %d files", n)
	}
}
