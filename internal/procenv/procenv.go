package procenv

import (
	"fmt"
	"strings"
)

// DefaultPass lists the variables every tool process gets from the
// runtime's environment. A name ending in * passes every variable with
// that prefix.
var DefaultPass = []string{"PATH", "HOME", "LANG", "LC_*", "TZ", "TMPDIR", "USER", "LOGNAME", "SHELL", "TERM"}

// Reserved is the prefix of the runtime's own variables, never passed.
const Reserved = "AGENTSLICE_"

// Build returns the environment of a tool process: the entries of parent
// (KEY=VALUE, as os.Environ returns them) whose name DefaultPass or pass
// allows, then extra (configured KEY=VALUE entries, which win: exec keeps a
// key's last value). Entries named AGENTSLICE_* are left out of all three.
// The result is never nil, so exec.Cmd does not fall back to inheriting.
func Build(parent, pass, extra []string) []string {
	out := make([]string, 0, len(DefaultPass)+len(pass)+len(extra))
	for _, kv := range parent {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || reserved(k) || !(allowed(k, DefaultPass) || allowed(k, pass)) {
			continue
		}
		out = append(out, kv)
	}
	for _, kv := range extra {
		if k, _, _ := strings.Cut(kv, "="); !reserved(k) {
			out = append(out, kv)
		}
	}
	return out
}

// CheckName reports why name cannot be passed to a tool process (reserved
// or not a variable name); nil when it can. A trailing * is allowed.
func CheckName(name string) error {
	n := strings.TrimSuffix(name, "*")
	switch {
	case n == "" || strings.ContainsAny(n, "=*\x00"):
		return fmt.Errorf("%q is not a variable name (or a prefix ending in *)", name)
	case reserved(n) || strings.HasPrefix(Reserved, strings.ToUpper(n)):
		return fmt.Errorf("%q would pass the runtime's own %s* variables (its secrets), which tools never get", name, Reserved)
	}
	return nil
}

// reserved reports whether k is one of the runtime's own variables. The
// comparison ignores case: Windows' environment does.
func reserved(k string) bool {
	return len(k) >= len(Reserved) && strings.EqualFold(k[:len(Reserved)], Reserved)
}

// allowed reports whether k matches a name of list (exactly, or by prefix
// for a name ending in *).
func allowed(k string, list []string) bool {
	for _, n := range list {
		if p, ok := strings.CutSuffix(n, "*"); ok {
			if strings.HasPrefix(k, p) {
				return true
			}
		} else if k == n {
			return true
		}
	}
	return false
}
