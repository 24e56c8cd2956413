package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agentslice/agentslice/internal/rap"
)

// Squash brings a child's sandbox changes (since its base) into the
// parent's sandbox as one commit on the parent's branch. The child must
// have been stacked on the parent (its base is in the parent's history).
// A conflict is an *ApplyError naming the files; both sandboxes' files
// are then as they were (the parent's uncommitted edits are committed to
// its branch first, as for stacking). Afterwards the child's base is what
// was squashed, so a later Squash brings only newer work.
func (m *Manager) Squash(ctx context.Context, parent, child string) (*Applied, error) {
	if parent == child {
		return nil, fmt.Errorf("sandbox: thread %s cannot squash itself", parent)
	}
	p, err := m.Lookup(ctx, parent)
	if err != nil {
		return nil, err
	}
	c, err := m.Lookup(ctx, child)
	if err != nil {
		return nil, err
	}
	for _, x := range []struct {
		sb     *Sandbox
		thread string
	}{{p, parent}, {c, child}} {
		if x.sb == nil {
			return nil, fmt.Errorf("sandbox: thread %s has no sandbox yet (its first sandbox tool call makes it)", x.thread)
		}
	}
	m.creating.Lock()
	defer m.creating.Unlock()
	ptip, err := p.snapshot(ctx, "agentslice: snapshot of "+parent+" before squashing "+child)
	if err != nil {
		return nil, err
	}
	stack, err := git(ctx, m.repo, "rev-parse", "--verify", "--quiet", stackRefPrefix+c.Name)
	if err == nil {
		_, err = git(ctx, m.repo, "merge-base", "--is-ancestor", strings.TrimSpace(stack), ptip)
	}
	if err != nil {
		return nil, fmt.Errorf("sandbox: thread %s's sandbox is not stacked on %s's (a child spawned by %s is)", child, parent, parent)
	}
	ctip, err := c.snapshot(ctx, "agentslice: changes of "+child)
	if err != nil {
		return nil, err
	}
	names, err := git(ctx, m.repo, "diff", "--name-only", "--no-renames", "-z", c.base, ctip)
	if err != nil {
		return nil, fmt.Errorf("sandbox: listing the changes of thread %s: %w", child, err)
	}
	files := splitZ(names)
	if len(files) == 0 {
		return nil, ErrNothingToApply
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := m.applyRange(ctx, p.Dir, child, c.base, ctip, "its changes conflict with "+parent+"'s"); err != nil {
		if _, rerr := git(context.WithoutCancel(ctx), p.Dir, "reset", "--hard", "--quiet", ptip); rerr != nil {
			return nil, errors.Join(err, fmt.Errorf("sandbox: restoring thread %s's sandbox: %w", parent, rerr))
		}
		return nil, err
	}
	if _, err := git(ctx, p.Dir, "-c", "user.name=agentslice", "-c", "user.email=agentslice@localhost",
		"commit", "--quiet", "--no-verify", "-m", "agentslice: squash "+child+" into "+parent); err != nil {
		return nil, fmt.Errorf("sandbox: committing the squash of thread %s: %w", child, err)
	}
	commit, err := git(ctx, p.Dir, "rev-parse", "--verify", "HEAD")
	if err != nil {
		return nil, fmt.Errorf("sandbox: reading the squash commit of thread %s: %w", child, err)
	}
	if _, err := git(ctx, m.repo, "update-ref", baseRefPrefix+c.Name, ctip); err != nil {
		return nil, fmt.Errorf("sandbox: recording the new base of thread %s: %w", child, err)
	}
	c.mu.Lock()
	c.base = ctip
	c.mu.Unlock()
	return &Applied{Commit: strings.TrimSpace(commit), Files: files}, nil
}

// squashTool is the squash_child tool: the calling thread squashes one of
// its children's sandboxes into its own.
func (m *Manager) squashTool() rap.Tool {
	return rap.Tool{
		Name:        "squash_child",
		Description: "Brings the changes a child thread made in its sandbox into yours as one commit. A conflict is an error naming the files; both sandboxes then stay as they were.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{
			"thread":{"type":"string","minLength":1,"description":"the child thread's ID (as spawn_thread returned it)"}},
			"required":["thread"],"additionalProperties":false}`),
		Run: m.handler(func(ctx context.Context, sb *Sandbox, c *rap.Call) (string, error) {
			var a struct {
				Thread string `json:"thread"`
			}
			if err := c.Args(&a); err != nil {
				return "", err
			}
			done, err := m.Squash(ctx, sb.Thread, a.Thread)
			if errors.Is(err, ErrNothingToApply) {
				return fmt.Sprintf("thread %s has no changes to squash", a.Thread), nil
			}
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("squashed thread %s into your sandbox as commit %s: %s", a.Thread, short(done.Commit), strings.Join(done.Files, ", ")), nil
		}),
	}
}
