package sandbox

import (
	"context"
	_ "embed"
	"fmt"
	"path"
	"slices"
	"strings"
)

// The built-in coding agent's instructions: what the runtime lets it do
// (background commands, stacked children, squash), shipped in the binary.
// A deployment overrides them by defining an agent of the same name.
//
//go:embed coder.md
var coderInstructions string

// CoderAgent is the name of the built-in coding agent.
const CoderAgent = "coder"

// CoderToolsets are the toolsets the built-in coding agent uses.
var CoderToolsets = []string{ToolsetName, "threads", "sleep"}

// Caps on the project conventions appended to the coding agent's
// instructions: per source and in all.
const (
	MaxConventionBytes  = 16 << 10
	MaxConventionsBytes = 48 << 10
)

// conventionFiles are the files whose text is appended, in this order
// (then every file under .cursor/rules, sorted).
var conventionFiles = []string{"AGENTS.md", "CLAUDE.md"}

// CoderInstructions returns the built-in coding agent's instructions with
// the repository's conventions appended: AGENTS.md, CLAUDE.md and the
// files under .cursor/rules as they are in the user's HEAD commit (what
// a sandbox starts from), each named, each cut at MaxConventionBytes and
// all at MaxConventionsBytes, with a note where cut.
// repo is any directory of the repository's working copy.
func CoderInstructions(ctx context.Context, repo string) (string, error) {
	conv, err := Conventions(ctx, repo)
	if err != nil {
		return "", err
	}
	if conv == "" {
		return coderInstructions, nil
	}
	return coderInstructions + "\n" + conv, nil
}

// Repo names a repository's directory (ReposInstructions).
type Repo struct{ Name, Dir string }

// ReposInstructions are CoderInstructions for a server of several
// repositories: they name them, and each one's conventions come under
// its name.
func ReposInstructions(ctx context.Context, repos []Repo) (string, error) {
	if len(repos) == 1 {
		return CoderInstructions(ctx, repos[0].Dir)
	}
	var b strings.Builder
	b.WriteString(coderInstructions)
	names := make([]string, len(repos))
	for i, r := range repos {
		names[i] = r.Name
	}
	fmt.Fprintf(&b, "\n# Repositories\n\nThis server serves several repositories (%s). Each thread works in one: the one its first message named, else its parent's. Your tools work in yours.\n",
		strings.Join(names, ", "))
	for _, r := range repos {
		c, err := Conventions(ctx, r.Dir)
		if err != nil {
			return "", err
		}
		if c != "" {
			fmt.Fprintf(&b, "\n(Repository %s:)\n%s", r.Name, c)
		}
	}
	return b.String(), nil
}

// Conventions renders the repository's convention files (see
// CoderInstructions), "" when it has none.
func Conventions(ctx context.Context, repo string) (string, error) {
	top, err := git(ctx, repo, "rev-parse", "--show-toplevel")
	if err != nil {
		return "", fmt.Errorf("sandbox: %s is not a git working copy: %w", repo, err)
	}
	top = strings.TrimSpace(top)
	out, err := git(ctx, top, "ls-tree", "-r", "-z", "--name-only", "HEAD", "--", "AGENTS.md", "CLAUDE.md", ".cursor/rules")
	if err != nil {
		return "", fmt.Errorf("sandbox: listing the conventions of %s: %w", top, err)
	}
	files := splitZ(out)
	rank := func(f string) int {
		if i := slices.Index(conventionFiles, f); i >= 0 {
			return i
		}
		return len(conventionFiles)
	}
	slices.SortStableFunc(files, func(a, b string) int {
		if ra, rb := rank(a), rank(b); ra != rb {
			return ra - rb
		}
		return strings.Compare(a, b)
	})
	var b strings.Builder
	for _, f := range files {
		if rank(f) == len(conventionFiles) && !strings.HasPrefix(f, ".cursor/rules/") {
			continue
		}
		text, err := git(ctx, top, "show", "HEAD:"+f)
		if err != nil {
			return "", fmt.Errorf("sandbox: reading %s of %s: %w", f, top, err)
		}
		if strings.TrimSpace(text) == "" {
			continue
		}
		if b.Len() == 0 {
			fmt.Fprintf(&b, "# Project conventions\n\nThe repository %s has these convention files (from its HEAD commit). Follow them; where they contradict the instructions above about the tools, the tools win.\n",
				path.Base(top))
		}
		if len(text) > MaxConventionBytes {
			text = strings.ToValidUTF8(text[:MaxConventionBytes], "") + fmt.Sprintf("\n[%s cut at %d bytes; read_file %s for the rest]\n", f, MaxConventionBytes, f)
		}
		section := fmt.Sprintf("\n## %s\n\n%s", f, strings.TrimRight(text, "\n")+"\n")
		if b.Len()+len(section) > MaxConventionsBytes {
			fmt.Fprintf(&b, "\n[more convention files left out (at most %d bytes in all), from %s on; read_file reads them]\n", MaxConventionsBytes, f)
			break
		}
		b.WriteString(section)
	}
	return b.String(), nil
}
