package main

import (
	"flag"
	"io"
	"os"
	"strings"
	"testing"
)

// TestConfigurationDocumentsServeFlags: docs/configuration.md names every
// flag of `agentslice serve` (as `-name`, at the start of a table cell), so
// a new flag cannot go undocumented there.
func TestConfigurationDocumentsServeFlags(t *testing.T) {
	page, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	newServeFlags(io.Discard).fs.VisitAll(func(f *flag.Flag) {
		n++
		if !strings.Contains(string(page), "| `-"+f.Name+"`") && !strings.Contains(string(page), "| `-"+f.Name+" ") {
			t.Errorf("docs/configuration.md does not document serve's flag -%s", f.Name)
		}
	})
	if n < 10 {
		t.Fatalf("serve has only %d flags?", n)
	}
}
