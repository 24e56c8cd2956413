package server

import (
	"fmt"
	"os"
	"time"

	"github.com/agentslice/agentslice/internal/rap/sandbox"
)

// Sandbox configures the sandbox toolset.
type Sandbox struct {
	// Repo is the user's git repository the sandboxes are made from (its
	// working copy, index and branch are never written); in a file,
	// relative to the file's directory.
	Repo string `json:"repo"`
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
	if sb.Repo == "" {
		return &ConfigError{Field: "sandbox.repo", Reason: "missing: the git repository the sandboxes are made from"}
	}
	if fi, err := os.Stat(sb.Repo); err != nil || !fi.IsDir() {
		return &ConfigError{Field: "sandbox.repo", Reason: fmt.Sprintf("%q is not a directory", sb.Repo)}
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
