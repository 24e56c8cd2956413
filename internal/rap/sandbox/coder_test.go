package sandbox

import (
	"context"
	"strings"
	"testing"
)

// TestConventions: the convention files of HEAD (not the working copy's
// edits), AGENTS.md then CLAUDE.md then .cursor/rules/* sorted, each named,
// a long one cut with a note; none gives the instructions alone.
func TestConventions(t *testing.T) {
	t.Parallel()
	repo := testRepo(t)
	ctx := context.Background()
	plain, err := CoderInstructions(ctx, repo)
	if err != nil || plain != coderInstructions || strings.Contains(plain, "# Project conventions") {
		t.Fatalf("without convention files: %v\n%s", err, plain)
	}
	write(t, repo, "CLAUDE.md", "claude rules\n")
	write(t, repo, "AGENTS.md", "agents rules\n")
	write(t, repo, ".cursor/rules/b.mdc", strings.Repeat("x", MaxConventionBytes+10))
	write(t, repo, ".cursor/rules/a.mdc", "cursor a\n")
	write(t, repo, "docs/AGENTS.md", "not at the top\n")
	gitOut(t, repo, "add", "CLAUDE.md", "AGENTS.md", ".cursor", "docs")
	gitOut(t, repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "--quiet", "-m", "conventions")
	write(t, repo, "AGENTS.md", "uncommitted edit\n")
	got, err := CoderInstructions(ctx, repo)
	if err != nil {
		t.Fatal(err)
	}
	conv := strings.TrimPrefix(got, coderInstructions)
	order := []string{"# Project conventions", "## AGENTS.md\n\nagents rules\n", "## CLAUDE.md\n\nclaude rules\n",
		"## .cursor/rules/a.mdc\n\ncursor a\n", "## .cursor/rules/b.mdc\n\nxxx", "[.cursor/rules/b.mdc cut at 16384 bytes"}
	at := 0
	for _, w := range order {
		i := strings.Index(conv[at:], w)
		if i < 0 {
			t.Fatalf("conventions lack %q after byte %d:\n%.2000s", w, at, conv)
		}
		at += i + len(w)
	}
	if strings.Contains(conv, "uncommitted edit") || strings.Contains(conv, "not at the top") {
		t.Fatalf("conventions from the working copy or a subdirectory:\n%.2000s", conv)
	}
	if len(conv) > MaxConventionsBytes+1024 {
		t.Fatalf("conventions of %d bytes, over the cap", len(conv))
	}
}
