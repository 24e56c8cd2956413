package server

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/agentslice/agentslice/internal/procenv"
	"github.com/agentslice/agentslice/internal/rap"
	"github.com/agentslice/agentslice/internal/rap/sandbox"
)

// Sandbox configures the sandbox toolset.
type Sandbox struct {
	// Repo is the user's git repository the sandboxes are made from (its
	// working copy, index and branch are never written); in a file,
	// relative to the file's directory. Named by its directory's base name.
	Repo string `json:"repo,omitempty"`
	// Repos are the repositories a thread may name (the repo field of its
	// first message), by name; instead of Repo, or besides it (Repo is
	// then one more, named by its base name). Each has its own root under
	// Root (or under the cache directory). A thread that names none works
	// in the only one, or in its parent's.
	Repos map[string]string `json:"repos,omitempty"`
	// Root is where the sandboxes' worktrees live. Default: under the
	// user's cache directory (see sandbox.Config).
	Root string `json:"root,omitempty"`
	// Timeout kills a run_command that runs longer. Default 20m.
	Timeout string `json:"timeout,omitempty"`
	// Jail runs commands in a bubblewrap jail: "auto" (the default: where
	// it works, and serve logs when it does not), "on" (serve refuses to
	// start without it) or "off".
	Jail string `json:"jail,omitempty"`
	// Network lets jailed commands use the network. Default false.
	Network bool `json:"network,omitempty"`
	// OutputEvery is how often a running command's new output goes out
	// (a view_update). Default 5s.
	OutputEvery string `json:"output_every,omitempty"`
}

// resolveSandbox checks the sandbox section: a repository directory, a
// timeout, and no other toolset offering its names.
func (c *Config) resolveSandbox(s *settings) error {
	sb := c.Sandbox
	if sb == nil {
		return nil
	}
	if sb.Repo == "" && len(sb.Repos) == 0 {
		return &ConfigError{Field: "sandbox.repo", Reason: "missing: the git repository the sandboxes are made from (or sandbox.repos, several by name)"}
	}
	for _, r := range sb.repoList() {
		if !repoNameRE.MatchString(r.name) || r.name == "." || r.name == ".." {
			return &ConfigError{Field: r.field, Reason: fmt.Sprintf("the name %q must be 1 to 64 letters, digits, ., _ and - (a thread names it)", r.name)}
		}
		if fi, err := os.Stat(r.path); err != nil || !fi.IsDir() {
			return &ConfigError{Field: r.field, Reason: fmt.Sprintf("%q is not a directory", r.path)}
		}
	}
	if _, dup := sb.Repos[baseName(sb.Repo)]; sb.Repo != "" && dup {
		return &ConfigError{Field: "sandbox.repos", Reason: fmt.Sprintf("names %q, which is also sandbox.repo's name (its directory's)", baseName(sb.Repo))}
	}
	if e := c.ExampleTools; e != nil && e.RunCommand != nil {
		return &ConfigError{Field: "sandbox", Reason: "the sandbox offers run_command, so example_tools.run_command cannot be on too (tool names are unique across toolsets)"}
	}
	for i, m := range c.MCPServers {
		if m.Name == sandboxToolset {
			return &ConfigError{Field: fmt.Sprintf("mcp_servers[%d].name", i), Reason: fmt.Sprintf("%q is the sandbox toolset's name", m.Name)}
		}
	}
	switch sandbox.JailMode(sb.Jail) {
	case "", sandbox.JailAuto, sandbox.JailOn, sandbox.JailOff:
	default:
		return &ConfigError{Field: "sandbox.jail", Reason: fmt.Sprintf("%q is not one of auto, on, off", sb.Jail)}
	}
	var err error
	if s.sandboxTimeout, err = duration("sandbox.timeout", sb.Timeout, 20*time.Minute); err != nil {
		return err
	}
	s.sandboxBatch, err = duration("sandbox.output_every", sb.OutputEvery, sandbox.DefaultBatch)
	return err
}

var repoNameRE = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// sandboxRepo is one configured repository.
type sandboxRepo struct {
	name, path, field string
}

// repoList returns the configured repositories: Repo first, then Repos
// by name.
func (sb *Sandbox) repoList() []sandboxRepo {
	var out []sandboxRepo
	if sb.Repo != "" {
		out = append(out, sandboxRepo{baseName(sb.Repo), sb.Repo, "sandbox.repo"})
	}
	names := make([]string, 0, len(sb.Repos))
	for n := range sb.Repos {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		out = append(out, sandboxRepo{n, sb.Repos[n], "sandbox.repos." + n})
	}
	return out
}

// baseName is the name of the repository at path: its directory's.
func baseName(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	return filepath.Base(path)
}

// relativeTo makes the section's relative repository paths relative to
// dir (the configuration file's directory).
func (sb *Sandbox) relativeTo(dir string) {
	if sb.Repo != "" && !filepath.IsAbs(sb.Repo) {
		sb.Repo = filepath.Join(dir, sb.Repo)
	}
	for n, p := range sb.Repos {
		if p != "" && !filepath.IsAbs(p) {
			sb.Repos[n] = filepath.Join(dir, p)
		}
	}
}

// coderInstructions are the coding agent's instructions with the
// repositories' conventions appended (sandbox.CoderInstructions).
func (sb *Sandbox) coderInstructions() (string, error) {
	var repos []sandbox.Repo
	for _, r := range sb.repoList() {
		if _, err := sandbox.Conventions(context.Background(), r.path); err != nil {
			return "", &ConfigError{Field: r.field, Reason: err.Error()} // not a repository
		}
		repos = append(repos, sandbox.Repo{Name: r.name, Dir: r.path})
	}
	instr, err := sandbox.ReposInstructions(context.Background(), repos)
	if err != nil {
		return "", &ConfigError{Field: "sandbox", Reason: err.Error()}
	}
	return instr, nil
}

// buildSandbox builds the sandbox toolset: a Manager per repository, one
// server for them, mounted under ToolsPrefix/sandbox.
func (s *Server) buildSandbox(retry rap.RetryPolicy) error {
	sb := s.cfg.Sandbox
	if sb == nil {
		return nil
	}
	var ms []*sandbox.Manager
	for _, r := range sb.repoList() {
		root := sb.Root
		if root != "" && len(sb.repoList()) > 1 {
			root = filepath.Join(root, r.name)
		}
		mgr, err := sandbox.NewManager(sandbox.Config{Name: r.name, Repo: r.path, Root: root, Timeout: s.set.sandboxTimeout,
			Batch: s.set.sandboxBatch, Jail: sandbox.JailMode(sb.Jail), Network: sb.Network, NetworkFor: s.agentNetwork, Logger: s.log,
			Env: procenv.Build(os.Environ(), s.cfg.PassEnv, nil)})
		if err != nil {
			return &ConfigError{Field: r.field, Reason: err.Error()}
		}
		ms = append(ms, mgr)
		s.log.Info("sandbox toolset: a git worktree per thread", "repo", mgr.Name(), "dir", mgr.Repo(), "root", mgr.Root())
	}
	repos, err := sandbox.NewRepos(ms...)
	if err != nil {
		return &ConfigError{Field: "sandbox.repos", Reason: err.Error()}
	}
	kit, err := sandbox.NewReposServer(repos, rap.ServerConfig{PublicURL: s.url + ToolsPrefix + sandboxToolset, Client: s.client, Retry: retry, Logger: s.log})
	if err != nil {
		return fmt.Errorf("server: building the sandbox tools: %w", err)
	}
	s.services = append(s.services, mounted{sandboxToolset, kit})
	s.sandbox, s.repos = ms[0], repos
	switch jailed, why := ms[0].Jailed(); {
	case jailed:
		s.log.Info("sandbox: commands run in a bubblewrap jail (read-only system, writable sandbox, private /tmp; the network and other writes only when the person or the agent's definition allows)", "network", sb.Network)
	case why != "":
		s.log.Warn("sandbox: commands run UNJAILED, as this server's user: they can write outside their sandbox and use the network (docs/sandbox.md)", "why", why)
	default:
		s.log.Warn("sandbox: commands run unjailed (sandbox.jail is off)")
	}
	return nil
}

// agentNetwork is sandbox.Config.NetworkFor: the network field of the
// definition of the agent the thread runs as ("" without agents).
func (s *Server) agentNetwork(ctx context.Context, thread string) (sandbox.Access, error) {
	if s.agents == nil {
		return "", nil
	}
	th, err := s.store.Load(ctx, thread)
	if err != nil {
		return "", fmt.Errorf("loading thread %s: %w", thread, err)
	}
	name := th.State.Agent
	if name == "" {
		name = s.agents.Default()
	}
	v, ok := s.agents.Agent(name)
	if !ok {
		return "", fmt.Errorf("thread %s runs as agent %q, which is not defined", thread, name)
	}
	return sandbox.Access(v.Agent.Network), nil
}

// bindRepo binds a thread to the repository its message names (the
// message's repo field), before the message is sent. A name that is no
// good gives the field, the reason and the HTTP status to answer; status
// 0 means bound (or nothing named).
func (s *Server) bindRepo(ctx context.Context, thread, name string) (field, reason string, status int) {
	if name == "" {
		return "", "", 0
	}
	if s.repos == nil {
		return "repo", fmt.Sprintf("names %q, but this server has no sandbox repositories (configure sandbox.repo or sandbox.repos)", name), 400
	}
	err := s.repos.Bind(ctx, thread, name)
	var bc *sandbox.BindConflictError
	switch {
	case err == nil:
		return "", "", 0
	case errors.Is(err, sandbox.ErrUnknownRepo):
		return "repo", fmt.Sprintf("%q is not a repository of this server (have: %s)", name, strings.Join(s.repos.Names(), ", ")), 400
	case errors.As(err, &bc):
		return "repo", bc.Error(), 409
	default:
		return "", err.Error(), 503 // the binding could not be written: try again
	}
}
