package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/agentslice/agentslice/internal/rap"
)

// Caps of a search result.
const (
	maxMatches   = 200
	maxMatchLine = 300 // bytes of one matching line shown
)

// searchTool is the search tool: git grep over the sandbox's tracked and
// new files (what .gitignore ignores is skipped, as list_files does). It
// needs nothing but git, so the result is the same on every host.
func (m *Manager) searchTool() rap.Tool {
	return rap.Tool{
		Name: "search",
		Description: "Searches the files of your sandbox (tracked and new, without what .gitignore ignores) for a regular expression (POSIX extended syntax, as grep -E). " +
			"Answers path:line:text per match, at most 200.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{
			"pattern":{"type":"string","minLength":1,"description":"the regular expression"},
			"path":{"type":"string","description":"directory or file to search, relative to the repository's top; default the top"},
			"glob":{"type":"string","minLength":1,"description":"only files whose path matches this glob, e.g. *.go"},
			"ignore_case":{"type":"boolean"}},
			"required":["pattern"],"additionalProperties":false}`),
		Annotations: &rap.Annotations{ReadOnly: true, Idempotent: true},
		Run:         m.handler(m.search),
	}
}

func (m *Manager) search(ctx context.Context, sb *Sandbox, c *rap.Call) (string, error) {
	var a struct {
		Pattern    string `json:"pattern"`
		Path       string `json:"path"`
		Glob       string `json:"glob"`
		IgnoreCase bool   `json:"ignore_case"`
	}
	if err := c.Args(&a); err != nil {
		return "", err
	}
	full, err := sb.resolve(a.Path)
	if err != nil {
		return "", err
	}
	rel, _ := filepath.Rel(sb.Dir, full)
	spec := filepath.ToSlash(rel)
	if spec == "." {
		spec = ""
	}
	if a.Glob != "" {
		if strings.HasPrefix(a.Glob, ":") || strings.Contains(a.Glob, "..") {
			return "", fmt.Errorf("glob %q: give a plain pattern such as *.go", a.Glob)
		}
		if spec == "" {
			spec = a.Glob
		} else {
			spec += "/" + a.Glob
		}
	}
	args := []string{"-C", sb.Dir, "grep", "-n", "-I", "-E", "--untracked", "--exclude-standard", "--no-color", "--full-name", "-z"}
	if a.IgnoreCase {
		args = append(args, "-i")
	}
	args = append(args, "-e", a.Pattern, "--", ":(top)"+spec)
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Env = gitEnv()
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee) && ee.ExitCode() == 1 && stderr.Len() == 0:
		return "no matches", nil
	case err != nil:
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		return "", fmt.Errorf("searching for %q: %s", a.Pattern, msg)
	}
	var b strings.Builder
	n := 0
	for line := range strings.SplitSeq(strings.TrimSuffix(stdout.String(), "\n"), "\n") {
		n++
		if n > maxMatches {
			continue
		}
		// -z: path NUL line NUL text.
		parts := strings.SplitN(line, "\x00", 3)
		if len(parts) != 3 {
			continue
		}
		text := parts[2]
		if len(text) > maxMatchLine {
			cut := maxMatchLine
			for cut > 0 && !utf8.RuneStart(text[cut]) {
				cut--
			}
			text = text[:cut] + " [line cut]"
		}
		fmt.Fprintf(&b, "%s:%s:%s\n", parts[0], parts[1], text)
	}
	if n > maxMatches {
		fmt.Fprintf(&b, "[%d matches; the first %d shown: narrow with path or glob]\n", n, maxMatches)
	}
	return b.String(), nil
}
