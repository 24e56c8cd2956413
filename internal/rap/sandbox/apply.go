package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Applied is what Apply did.
type Applied struct {
	Commit string   // the new commit on the user's branch
	Files  []string // the files it changed
}

// ErrNothingToApply is returned by Apply for a sandbox without changes
// since its base.
var ErrNothingToApply = errors.New("sandbox: nothing to apply")

// ApplyError is a refusal of Apply: the user's state is not touched.
type ApplyError struct {
	Thread string
	Reason string
	Files  []string
}

func (e *ApplyError) Error() string {
	return fmt.Sprintf("sandbox: cannot apply thread %s: %s: %s", e.Thread, e.Reason, strings.Join(e.Files, ", "))
}

// Apply brings a thread's sandbox changes (since its base) onto the
// user's current branch as one commit, and updates the user's index and
// working copy for the files it touches. It is the one operation that
// writes the user's state, and only a person asks for it (it is no tool of
// the toolset). It refuses, changing nothing, when a touched file has
// uncommitted changes in the user's working copy or index, or when the
// changes do not apply to the user's HEAD (an *ApplyError naming the
// files). Afterwards the sandbox's base is its applied state, so a later
// Apply brings only what changed since.
func (m *Manager) Apply(ctx context.Context, thread, message string) (*Applied, error) {
	return m.apply(ctx, thread, message, false)
}

// Check says whether Apply would succeed now, changing nothing the user
// owns: nil, ErrNothingToApply or the *ApplyError Apply would return. It
// commits the sandbox's uncommitted changes to its branch (as Apply and a
// child's spawn do) and composes the commit in a scratch worktree, so it
// costs what an apply costs.
func (m *Manager) Check(ctx context.Context, thread string) error {
	_, err := m.apply(ctx, thread, "", true)
	return err
}

func (m *Manager) apply(ctx context.Context, thread, message string, dryRun bool) (*Applied, error) {
	sb, err := m.Lookup(ctx, thread)
	if err != nil {
		return nil, err
	}
	if sb == nil {
		return nil, fmt.Errorf("sandbox: thread %s has no sandbox", thread)
	}
	m.creating.Lock() // no stacking or second apply meanwhile
	defer m.creating.Unlock()
	tip, err := sb.snapshot(ctx, "agentslice: changes of "+thread)
	if err != nil {
		return nil, err
	}
	names, err := git(ctx, m.repo, "diff", "--name-only", "--no-renames", "-z", sb.base, tip)
	if err != nil {
		return nil, fmt.Errorf("sandbox: listing the changes of thread %s: %w", thread, err)
	}
	files := splitZ(names)
	if len(files) == 0 {
		return nil, ErrNothingToApply
	}
	head, err := git(ctx, m.repo, "rev-parse", "--verify", "HEAD^{commit}")
	if err != nil {
		return nil, fmt.Errorf("sandbox: reading the user's HEAD: %w", err)
	}
	head = strings.TrimSpace(head)
	dirty, err := git(ctx, m.repo, "--no-optional-locks", "status", "--porcelain=v1", "-z", "--untracked-files=all", "--", ".")
	if err != nil {
		return nil, fmt.Errorf("sandbox: reading the user's status: %w", err)
	}
	touched := map[string]bool{}
	for _, f := range files {
		touched[f] = true
	}
	var busy []string
	for _, e := range splitZ(dirty) {
		if len(e) > 3 && touched[e[3:]] {
			busy = append(busy, e[3:])
		}
	}
	if len(busy) > 0 {
		return nil, &ApplyError{Thread: thread, Reason: "these files have uncommitted changes in your working copy or index (commit or stash them first)", Files: busy}
	}
	commit, err := m.composeCommit(ctx, thread, sb.base, tip, head, message)
	if err != nil || dryRun {
		return nil, err
	}
	// Like a checkout from HEAD to commit: index and working copy move for
	// the touched files only; the user's other changes stay.
	if _, err := git(ctx, m.repo, "read-tree", "-m", "-u", head, commit); err != nil {
		return nil, fmt.Errorf("sandbox: updating your working copy for thread %s: %w", thread, err)
	}
	if _, err := git(ctx, m.repo, "update-ref", "-m", "agentslice: apply "+thread, "HEAD", commit, head); err != nil {
		return nil, fmt.Errorf("sandbox: moving your branch to %s (your working copy already has it; `git reset --soft %s` finishes): %w", short(commit), short(commit), err)
	}
	if _, err := git(ctx, m.repo, "update-ref", baseRefPrefix+sb.Name, tip); err != nil {
		return nil, fmt.Errorf("sandbox: recording the new base of thread %s: %w", thread, err)
	}
	sb.mu.Lock()
	sb.base = tip
	sb.mu.Unlock()
	return &Applied{Commit: commit, Files: files}, nil
}

// composeCommit makes, in a scratch worktree at head, the commit that
// applies base..tip to head (a three-way apply), and returns it. Nothing
// the user owns is touched; a conflict is an *ApplyError naming the files.
func (m *Manager) composeCommit(ctx context.Context, thread, base, tip, head, message string) (string, error) {
	scratch, err := os.MkdirTemp(m.cfg.Root, ".apply-"+Name(thread)+"-")
	if err != nil {
		return "", fmt.Errorf("sandbox: making a scratch directory for thread %s: %w", thread, err)
	}
	os.Remove(scratch) // worktree add wants to make it
	defer func() {
		_, _ = git(context.WithoutCancel(ctx), m.repo, "worktree", "remove", "--force", scratch)
		_ = os.RemoveAll(scratch)
	}()
	if _, err := git(ctx, m.repo, "worktree", "add", "--quiet", "--detach", scratch, head); err != nil {
		return "", fmt.Errorf("sandbox: making a scratch worktree for thread %s: %w", thread, err)
	}
	if err := m.applyRange(ctx, scratch, thread, base, tip, "the changes conflict with your branch"); err != nil {
		return "", err
	}
	if message == "" {
		message = "agentslice: changes of thread " + thread
	}
	args := []string{"commit", "--quiet", "--no-verify", "-m", message}
	if email, _ := git(ctx, m.repo, "config", "user.email"); strings.TrimSpace(email) == "" {
		args = append([]string{"-c", "user.name=agentslice", "-c", "user.email=agentslice@localhost"}, args...)
	}
	if _, err := git(ctx, scratch, args...); err != nil {
		return "", fmt.Errorf("sandbox: committing the changes of thread %s: %w", thread, err)
	}
	commit, err := git(ctx, scratch, "rev-parse", "--verify", "HEAD")
	if err != nil {
		return "", fmt.Errorf("sandbox: reading the commit of thread %s: %w", thread, err)
	}
	return strings.TrimSpace(commit), nil
}

// applyRange applies the changes base..tip to the worktree dir (index and
// files) with a three-way apply. A conflict is an *ApplyError naming the
// files, with reason; dir is then left for the caller to reset.
func (m *Manager) applyRange(ctx context.Context, dir, thread, base, tip, reason string) error {
	patch, err := git(ctx, m.repo, "diff", "--binary", "--no-color", "--no-ext-diff", base, tip)
	if err != nil {
		return fmt.Errorf("sandbox: diffing thread %s: %w", thread, err)
	}
	cmd := exec.CommandContext(ctx, "git", "-C", dir, "apply", "--3way", "--index", "--whitespace=nowarn", "-")
	cmd.Stdin = strings.NewReader(patch)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	if out, err := cmd.CombinedOutput(); err != nil {
		conflicted, _ := git(ctx, dir, "diff", "--name-only", "--diff-filter=U", "-z")
		files := splitZ(conflicted)
		if len(files) == 0 {
			files = []string{strings.TrimSpace(string(out))}
		}
		return &ApplyError{Thread: thread, Reason: reason, Files: files}
	}
	return nil
}

func splitZ(s string) []string {
	var out []string
	for f := range strings.SplitSeq(s, "\x00") {
		if f != "" {
			out = append(out, filepath.ToSlash(f))
		}
	}
	return out
}

// Discard removes a thread's sandbox: its worktree, its branch and its
// refs. Its changes are lost (apply them first to keep them). The user's
// working copy, index and branch are not touched. A later tool call of the
// thread makes a fresh sandbox from the user's HEAD.
func (m *Manager) Discard(ctx context.Context, thread string) error {
	sb, err := m.Lookup(ctx, thread)
	if err != nil {
		return err
	}
	if sb == nil {
		return fmt.Errorf("sandbox: thread %s has no sandbox", thread)
	}
	m.creating.Lock()
	defer m.creating.Unlock()
	sb.mu.Lock()
	defer sb.mu.Unlock()
	if _, err := git(ctx, m.repo, "worktree", "remove", "--force", "--force", sb.Dir); err != nil {
		return fmt.Errorf("sandbox: removing the worktree of thread %s: %w", thread, err)
	}
	m.mu.Lock()
	delete(m.boxes, thread)
	m.mu.Unlock()
	if _, err := git(ctx, m.repo, "branch", "--quiet", "-D", sb.Branch); err != nil {
		return fmt.Errorf("sandbox: deleting the branch %s of thread %s: %w", sb.Branch, thread, err)
	}
	for _, ref := range []string{baseRefPrefix + sb.Name, stackRefPrefix + sb.Name} {
		if _, err := git(ctx, m.repo, "update-ref", "-d", ref); err != nil {
			return fmt.Errorf("sandbox: deleting %s of thread %s: %w", ref, thread, err)
		}
	}
	_ = os.Remove(m.grantPath(sb.Name))   // a new sandbox of the thread starts with no permissions
	_ = os.RemoveAll(m.storeDir(sb.Name)) // what its jailed commands wrote was brought over or is its own
	return nil
}
