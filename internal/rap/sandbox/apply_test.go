package sandbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestApplyBringsTheChangesAsOneCommit: Apply commits the sandbox's
// changes onto the user's branch and updates the touched files, leaving
// the user's other uncommitted, staged and untracked work as it was.
func TestApplyBringsTheChangesAsOneCommit(t *testing.T) {
	t.Parallel()
	repo := testRepo(t)
	r := newRig(t, repo, Config{})
	r.call(t, "thr_x", nil, "edit_file", map[string]any{"path": "calc/calc.go", "old": "a - b", "new": "a + b"})
	r.call(t, "thr_x", nil, "write_file", map[string]any{"path": "calc/calc_test.go", "content": "package calc\n"})
	oldHead := gitOut(t, repo, "rev-parse", "HEAD")
	ctx := context.Background()

	got, err := r.m.Apply(ctx, "thr_x", "Fix Add")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got.Files, " ") != "calc/calc.go calc/calc_test.go" {
		t.Fatalf("applied files %q", got.Files)
	}
	if head := gitOut(t, repo, "rev-parse", "HEAD"); head != got.Commit || gitOut(t, repo, "rev-parse", "HEAD^") != oldHead ||
		gitOut(t, repo, "symbolic-ref", "--short", "HEAD") != "main" || gitOut(t, repo, "log", "-1", "--format=%s") != "Fix Add" {
		t.Fatalf("HEAD %s (parent %s), want one new commit %s on main over %s", head, gitOut(t, repo, "rev-parse", "HEAD^"), got.Commit, oldHead)
	}
	if b, _ := os.ReadFile(filepath.Join(repo, "calc", "calc.go")); !strings.Contains(string(b), "a + b") {
		t.Fatalf("the working copy's calc.go: %q", b)
	}
	if st := gitOut(t, repo, "--no-optional-locks", "status", "--porcelain", "-uall"); st != "M README.md\nA  staged.txt\n?? scratch.txt" {
		t.Fatalf("the user's status after apply:\n%s\nwant only their own changes", st)
	}
	if _, err := r.m.Apply(ctx, "thr_x", ""); !errors.Is(err, ErrNothingToApply) {
		t.Fatalf("a second apply: %v, want ErrNothingToApply", err)
	}
	// Later work is applied alone.
	r.call(t, "thr_x", nil, "write_file", map[string]any{"path": "later.txt", "content": "later\n"})
	got, err = r.m.Apply(ctx, "thr_x", "")
	if err != nil || strings.Join(got.Files, " ") != "later.txt" {
		t.Fatalf("the later apply: %+v %v, want later.txt only", got, err)
	}
}

// TestApplyRefusesAndChangesNothing: a touched file the user changed, or
// changes that conflict with the user's branch, leave everything as it was.
func TestApplyRefusesAndChangesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("dirty", func(t *testing.T) {
		t.Parallel()
		repo := testRepo(t)
		r := newRig(t, repo, Config{})
		r.call(t, "thr_d", nil, "write_file", map[string]any{"path": "README.md", "content": "# from the agent\n"})
		before := fingerprint(t, repo)
		_, err := r.m.Apply(ctx, "thr_d", "")
		var ae *ApplyError
		if !errors.As(err, &ae) || strings.Join(ae.Files, " ") != "README.md" || !strings.Contains(ae.Reason, "uncommitted changes") {
			t.Fatalf("Apply = %v, want an ApplyError naming README.md", err)
		}
		if fingerprint(t, repo) != before {
			t.Fatal("a refused apply changed the user's state")
		}
	})
	t.Run("conflict", func(t *testing.T) {
		t.Parallel()
		repo := testRepo(t)
		r := newRig(t, repo, Config{})
		r.call(t, "thr_c", nil, "edit_file", map[string]any{"path": "calc/calc.go", "old": "a - b", "new": "a + b"})
		// Meanwhile the user commits their own fix of the same line.
		write(t, repo, "calc/calc.go", "package calc\n\nfunc Add(a, b int) int { return b + a }\n")
		gitOut(t, repo, "add", "calc/calc.go")
		gitOut(t, repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "--quiet", "-m", "mine")
		before := fingerprint(t, repo)
		_, err := r.m.Apply(ctx, "thr_c", "")
		var ae *ApplyError
		if !errors.As(err, &ae) || strings.Join(ae.Files, " ") != "calc/calc.go" || !strings.Contains(ae.Reason, "conflict") {
			t.Fatalf("Apply = %v, want a conflict naming calc/calc.go", err)
		}
		if fingerprint(t, repo) != before {
			t.Fatal("a conflicting apply changed the user's state")
		}
		if wt := gitOut(t, repo, "worktree", "list", "--porcelain"); strings.Count(wt, "worktree ") != 2 {
			t.Fatalf("a scratch worktree was left behind:\n%s", wt)
		}
	})
}

// TestDiscard: the worktree, branch and refs go; the user's state stays;
// the thread's next call starts afresh from HEAD.
func TestDiscard(t *testing.T) {
	t.Parallel()
	repo := testRepo(t)
	before := fingerprint(t, repo)
	r := newRig(t, repo, Config{})
	r.call(t, "thr_gone", nil, "write_file", map[string]any{"path": "junk.txt", "content": "junk\n"})
	dir := r.mustBox(t, "thr_gone").Dir
	if err := r.m.Discard(context.Background(), "thr_gone"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the worktree is still there: %v", err)
	}
	if refs := gitOut(t, repo, "for-each-ref", "refs/heads/agentslice/", "refs/agentslice/"); refs != "" {
		t.Fatalf("refs left behind:\n%s", refs)
	}
	if fingerprint(t, repo) != before {
		t.Fatal("discard changed the user's state")
	}
	mustContain(t, "afresh", r.call(t, "thr_gone", nil, "diff", map[string]any{}).Text, "no changes against the base")
	if err := r.m.Discard(context.Background(), "thr_never"); err == nil || !strings.Contains(err.Error(), "has no sandbox") {
		t.Fatalf("discarding a thread without a sandbox: %v", err)
	}
}
