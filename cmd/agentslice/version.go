package main

import (
	"context"
	"fmt"
	"io"
	"runtime/debug"
)

// runVersion prints what this binary was built from: the module version,
// the VCS revision and time (go build records them when it builds inside
// a git checkout), whether the tree was modified, and the Go version.
func runVersion(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("version", "version", stderr)
	if err := parseFlags(fs, args); err != nil {
		return ignoreHelp(err)
	}
	fmt.Fprintln(stdout, versionLine())
	return nil
}

func versionLine() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "agentslice (no build information)"
	}
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev, at, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = " (modified)"
			}
		}
	}
	line := "agentslice " + v
	if rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		line += " " + rev + dirty
		if at != "" {
			line += " " + at
		}
	}
	return line + " " + bi.GoVersion
}
