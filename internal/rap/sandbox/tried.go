package sandbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/agentslice/agentslice/internal/rap"
)

// What a jailed command tried. A command that declares it needs the
// network or a directory outside the sandbox asks the person first
// (permission.go); one that just tries is stopped by the jail, and its
// output says so in the words of whatever failed: a resolver's "Temporary
// failure in name resolution", curl's "Couldn't connect", "Read-only file
// system" with a path. triedNote reads the tail of a failed command's
// output for those words and, when it finds them, tells the model plainly
// what the jail refused and how to ask for it: run the command again with
// "network": true or "write_outside": [DIR], which asks the person (or
// which the agent's network policy decides).
//
// It is a heuristic: it matches messages, not system calls. A command
// that fails for another reason and prints such a line (a test of a
// server that is down prints "connection refused") gets the note too, and
// one whose tools word the failure otherwise gets none. The note says
// that it is a guess.

// networkSigns are the lower-case messages of a failed name lookup or
// connection (libc, Go, curl, Python, Node, git).
var networkSigns = []string{
	"temporary failure in name resolution", "could not resolve host", "name or service not known",
	"no such host", "network is unreachable", "connection refused", "couldn't connect to server",
	"failed to connect to", "failed to establish a new connection", "econnrefused", "enetunreach",
	"eai_again", "getaddrinfo", "dial tcp", "could not resolve",
}

// writeSigns are the lower-case messages of a write the jail refused: the
// jail binds the system read-only, so a write outside the sandbox fails
// with EROFS. EACCES ("permission denied") is left out on purpose: it is
// the host's own permissions (a bind does not change them, so
// write_outside would not help) or a file that is not executable.
var writeSigns = []string{"read-only file system", "erofs"}

// absPath finds absolute paths in a line of output.
var absPath = regexp.MustCompile(`/[^\s'"():,;<>\x60]+`)

// triedNote returns the note for a failed jailed command whose output
// (its log's tail) shows it tried what grant did not allow, or "".
func (m *Manager) triedNote(ctx context.Context, c *rap.Call, sb *Sandbox, grant jailGrant, output string) string {
	if m.bwrap == "" {
		return "" // unjailed: nothing was refused by a jail
	}
	var notes []string
	lower := strings.ToLower(output)
	if !grant.Network {
		for _, s := range networkSigns {
			if !strings.Contains(lower, s) {
				continue
			}
			n := fmt.Sprintf("note: the output looks like the command tried the network (%q), which the jail cuts: commands have no network unless they ask for it. ", s)
			switch m.networkAccess(ctx, c) {
			case AccessDeny:
				n += "Your agent may not use the network (network: deny), so asking is refused too: do the work without it, or end your turn and tell the person what you need."
			case AccessAllow:
				n += "Run it again with \"network\": true (your agent is allowed the network: no question)."
			default:
				n += "If it needs the network, run it again with \"network\": true, which asks the person first."
			}
			notes = append(notes, n)
			break
		}
	}
	if dirs, refused := m.refusedWrites(sb, grant, output); len(dirs) > 0 || len(refused) > 0 {
		n := "note: the output looks like the jail refused a write outside your sandbox (commands write only the sandbox, /tmp and the cache)."
		if len(dirs) > 0 {
			b := jsonList(dirs)
			n += fmt.Sprintf(" If the command must write there, run it again with \"write_outside\": %s, which asks the person first.", b)
		}
		for _, r := range refused {
			n += " " + r + "."
		}
		notes = append(notes, n)
	}
	if len(notes) == 0 {
		return ""
	}
	return strings.Join(notes, "\n") + "\n(This is read from the output's messages, so it is a guess: if the failure is something else, ignore this note.)\n"
}

// refusedWrites finds the paths outside the sandbox (and /tmp, the cache,
// what was granted) named on the output's lines of a refused write, and
// returns for each the nearest existing directory write_outside may name,
// or why it may not be asked for.
func (m *Manager) refusedWrites(sb *Sandbox, grant jailGrant, output string) (dirs, refused []string) {
	// (Not /tmp: it is writable in the jail, so a refused write there is
	// to a directory bound from the host, a git directory under /tmp.)
	skip := []string{sb.Dir, "/proc", "/dev", "/sys", m.metaDir()}
	skip = append(skip, grant.Write...)
	for _, line := range strings.Split(output, "\n") {
		l := strings.ToLower(line)
		if !slices.ContainsFunc(writeSigns, func(s string) bool { return strings.Contains(l, s) }) {
			continue
		}
		for _, p := range absPath.FindAllString(line, -1) {
			p = filepath.Clean(p)
			if slices.ContainsFunc(skip, func(s string) bool { return within(p, s) }) {
				continue
			}
			dir := nearestDir(p)
			if dir == "" {
				continue
			}
			d, err := m.outsideDir(sb, dir)
			switch {
			case err != nil:
				why := strings.TrimPrefix(err.Error(), "write_outside: ")
				if r := fmt.Sprintf("%s cannot be asked for: %s", p, why); !slices.Contains(refused, r) {
					refused = append(refused, r)
				}
			case !slices.Contains(dirs, d):
				dirs = append(dirs, d)
			}
		}
	}
	return dirs, refused
}

// nearestDir is p when it is a directory, else its nearest existing
// parent (never "/"), or "".
func nearestDir(p string) string {
	for d := p; d != "/" && d != "."; d = filepath.Dir(d) {
		if fi, err := os.Stat(d); err == nil {
			if fi.IsDir() {
				return d
			}
			continue
		}
	}
	return ""
}

// within says whether a is b or inside it.
func within(a, b string) bool {
	rel, err := filepath.Rel(b, a)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

func jsonList(s []string) string {
	q := make([]string, len(s))
	for i, x := range s {
		q[i] = fmt.Sprintf("%q", x)
	}
	return "[" + strings.Join(q, ", ") + "]"
}
