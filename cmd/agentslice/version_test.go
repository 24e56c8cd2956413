package main

import (
	"bytes"
	"context"
	"runtime"
	"strings"
	"testing"
)

// TestVersion: `agentslice version` (and --version) prints one line naming
// the binary and the Go version it was built with.
func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		var out, errb bytes.Buffer
		if code := run(context.Background(), args, &out, &errb); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errb.String())
		}
		line := out.String()
		if !strings.HasPrefix(line, "agentslice ") || !strings.HasSuffix(line, runtime.Version()+"\n") || strings.Count(line, "\n") != 1 {
			t.Fatalf("%v printed %q", args, line)
		}
	}
}
