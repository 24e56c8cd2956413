package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agentslice/agentslice/internal/rap"
)

// More than one repository per server: a Repos holds one Manager per
// repository, each with its own Root (so its own worktrees, logs and
// records), and one toolset whose tools work in the repository of the
// calling thread. A thread's repository is, in this order: the one it was
// bound to (Bind: serve binds a thread to the repository its first
// message names), the one it has a sandbox in, the one its nearest
// ancestor is bound to or has a sandbox in (a child works where its
// parent does, stacked on it), or the only one. Otherwise its tools answer
// an error naming the repositories. A binding is a file under the
// repository's Root/.agentslice/threads, so it survives restarts.

// ErrUnknownRepo is returned by Repos.Bind for a name that is not
// configured.
var ErrUnknownRepo = errors.New("sandbox: no such repository")

// BindConflictError is returned by Repos.Bind when the thread works in
// another repository already.
type BindConflictError struct {
	Thread, Repo, Want string
}

func (e *BindConflictError) Error() string {
	return fmt.Sprintf("sandbox: thread %s works in repository %s; it cannot move to %s", e.Thread, e.Repo, e.Want)
}

// Repos is the repositories one sandbox server serves, by name.
type Repos struct {
	list []*Manager
}

// NewRepos returns the set of ms, whose names (Manager.Name) must be
// unique and whose roots distinct.
func NewRepos(ms ...*Manager) (*Repos, error) {
	if len(ms) == 0 {
		return nil, errors.New("sandbox: no repository")
	}
	for i, m := range ms {
		for _, o := range ms[:i] {
			if o.Name() == m.Name() {
				return nil, fmt.Errorf("sandbox: two repositories are named %q", m.Name())
			}
			if o.Root() == m.Root() {
				return nil, fmt.Errorf("sandbox: repositories %q and %q have the same root %s", o.Name(), m.Name(), m.Root())
			}
		}
	}
	return &Repos{list: slices.Clone(ms)}, nil
}

// Names returns the repositories' names in their configured order.
func (r *Repos) Names() []string {
	out := make([]string, len(r.list))
	for i, m := range r.list {
		out[i] = m.Name()
	}
	return out
}

// Get returns the repository named name, or nil.
func (r *Repos) Get(name string) *Manager {
	for _, m := range r.list {
		if m.Name() == name {
			return m
		}
	}
	return nil
}

// Managers returns the repositories' managers in their configured order.
func (r *Repos) Managers() []*Manager { return slices.Clone(r.list) }

// Bind records that thread works in the repository named name. Binding a
// thread again to its repository does nothing; to another one is a
// *BindConflictError; an unknown name is ErrUnknownRepo (wrapped, with the
// names).
func (r *Repos) Bind(ctx context.Context, thread, name string) error {
	m := r.Get(name)
	if m == nil {
		return fmt.Errorf("%w %q (have: %s)", ErrUnknownRepo, name, strings.Join(r.Names(), ", "))
	}
	cur, err := r.own(ctx, thread)
	if err != nil {
		return err
	}
	switch {
	case cur == m:
		return nil
	case cur != nil:
		return &BindConflictError{Thread: thread, Repo: cur.Name(), Want: name}
	}
	p := m.bindPath(thread)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("sandbox: binding thread %s to %s: %w", thread, name, err)
	}
	if err := os.WriteFile(p, []byte(thread+"\n"), 0o644); err != nil {
		return fmt.Errorf("sandbox: binding thread %s to %s: %w", thread, name, err)
	}
	return nil
}

// own returns the repository the thread itself is bound to or has a
// sandbox in, or nil.
func (r *Repos) own(ctx context.Context, thread string) (*Manager, error) {
	for _, m := range r.list {
		if _, err := os.Stat(m.bindPath(thread)); err == nil {
			return m, nil
		}
	}
	for _, m := range r.list {
		sb, err := m.Lookup(ctx, thread)
		if err != nil {
			return nil, err
		}
		if sb != nil {
			return m, nil
		}
	}
	return nil, nil
}

// For returns the repository a thread's tools work in (see the top of
// this file).
func (r *Repos) For(ctx context.Context, thread string, ancestors []string) (*Manager, error) {
	if len(r.list) == 1 {
		return r.list[0], nil
	}
	if thread == "" {
		return nil, errors.New("sandbox: thread: missing")
	}
	for i := len(ancestors); i >= 0; i-- {
		t := thread
		if i < len(ancestors) {
			t = ancestors[i]
		}
		m, err := r.own(ctx, t)
		if err != nil || m != nil {
			return m, err
		}
	}
	return nil, fmt.Errorf("this thread names no repository, and this server has several (%s): the person names one when starting the thread (the message's repo field)", strings.Join(r.Names(), ", "))
}

// Lookup returns the thread's sandbox and its repository, or nils when it
// has none.
func (r *Repos) Lookup(ctx context.Context, thread string) (*Manager, *Sandbox, error) {
	for _, m := range r.list {
		sb, err := m.Lookup(ctx, thread)
		if err != nil || sb != nil {
			return m, sb, err
		}
	}
	return nil, nil, nil
}

func (m *Manager) bindPath(thread string) string {
	return filepath.Join(m.metaDir(), "threads", Name(thread))
}

// tools returns the toolset's tools: one repository's own, or for
// several, the same tools each run in the calling thread's repository.
func (r *Repos) tools() []rap.Tool {
	if len(r.list) == 1 {
		return r.list[0].Tools()
	}
	per := make([]map[string]rap.Tool, len(r.list))
	for i, m := range r.list {
		per[i] = map[string]rap.Tool{}
		for _, t := range m.Tools() {
			per[i][t.Name] = t
		}
	}
	out := r.list[0].Tools()
	for i := range out {
		name := out[i].Name
		out[i].Run = func(ctx context.Context, c *rap.Call) error {
			m, err := r.For(ctx, c.GroupID, c.ThreadAncestors)
			if err != nil {
				return c.Result(ctx, "error: "+err.Error())
			}
			return per[slices.Index(r.list, m)][name].Run(ctx, c)
		}
	}
	return out
}
