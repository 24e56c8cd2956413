package server

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/agentslice/agentslice/internal/model"
	"github.com/agentslice/agentslice/internal/rap/sandbox"
	"github.com/agentslice/agentslice/internal/runtime"
)

// resolveAgents reads the agents' instruction files and checks the
// definitions and what they refer to (models, toolsets, each other), so that
// a bad definition stops the server before anything starts.
func (c *Config) resolveAgents(s *settings) error {
	bad := func(field, format string, args ...any) error {
		return &ConfigError{Field: field, Reason: fmt.Sprintf(format, args...)}
	}
	agents, defaultAgent, err := c.withCoder()
	if err != nil {
		return err
	}
	if len(agents) == 0 {
		if defaultAgent != "" {
			return bad("default_agent", "names %q but no agents are defined", defaultAgent)
		}
		return nil
	}
	doc := runtime.AgentsDoc{Agents: agents, DefaultAgent: defaultAgent}
	defs, err := doc.Resolve("", os.ReadFile) // LoadConfig made file paths absolute
	if err != nil {
		var ae *runtime.AgentError
		if errors.As(err, &ae) {
			return &ConfigError{Field: ae.Field, Reason: ae.Reason}
		}
		return bad("agents", "%v", err)
	}
	local := map[string]bool{runtime.ToolsetThreads: true, runtime.ToolsetSleep: true}
	if e := c.ExampleTools; e != nil && (e.GetTime || e.RunCommand != nil) {
		local[exampleToolset] = true
	}
	for _, m := range c.MCPServers {
		local[m.Name] = true
	}
	if c.Sandbox != nil {
		local[sandboxToolset] = true
	}
	s.remoteToolsets = map[string]string{}
	for i, a := range defs {
		f := fmt.Sprintf("agents[%d]", i)
		if a.Model != "" {
			if c.Models == nil {
				return bad(f+".model", "names %q but there is no models catalog", a.Model)
			}
			if _, err := c.Models.Lookup(a.Model); err != nil {
				return bad(f+".model", "%q is not a model of the catalog (have: %s)", a.Model, catalogNames(c.Models))
			}
		}
		for j, t := range a.Tools {
			if local[t] {
				continue
			}
			if len(c.ToolServers) == 0 {
				return bad(fmt.Sprintf("%s.tools[%d]", f, j), "no toolset %q is configured (have: %s)", t, knownToolsets(local))
			}
			if _, seen := s.remoteToolsets[t]; !seen {
				s.remoteToolsets[t] = fmt.Sprintf("%s.tools[%d]", f, j)
			}
		}
	}
	s.agents, s.defaultAgent = defs, defaultAgent
	return nil
}

// withCoder returns the agent definitions with the built-in coding agent
// added when the sandbox toolset is on (docs/sandbox.md): its
// instructions are shipped in the binary, with the repository's
// conventions appended (sandbox.CoderInstructions); an agent the
// configuration names coder replaces it. Without agents of its own the
// configuration gets coder as the default agent; with exactly one and no
// default_agent, that one stays the default.
func (c *Config) withCoder() ([]AgentConfig, string, error) {
	agents, def := c.Agents, c.DefaultAgent
	if c.Sandbox == nil || slices.ContainsFunc(agents, func(a AgentConfig) bool { return a.Name == sandbox.CoderAgent }) {
		return agents, def, nil
	}
	instr, err := c.Sandbox.coderInstructions()
	if err != nil {
		return nil, "", err
	}
	switch {
	case def != "":
	case len(agents) == 0:
		def = sandbox.CoderAgent
	case len(agents) == 1:
		def = agents[0].Name
	}
	coder := AgentConfig{Agent: runtime.Agent{Name: sandbox.CoderAgent, Instructions: instr, Tools: sandbox.CoderToolsets}}
	return append(slices.Clone(agents), coder), def, nil
}

func catalogNames(c *model.Catalog) string {
	names := make([]string, len(c.Models))
	for i, m := range c.Models {
		names[i] = m.Name
	}
	return strings.Join(names, ", ")
}

func knownToolsets(local map[string]bool) string {
	names := make([]string, 0, len(local))
	for n := range local {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// exampleToolset is the toolset name of the in-process example tools.
const exampleToolset = "examples"

// sandboxToolset is the toolset name of the in-process sandbox tools.
const sandboxToolset = sandbox.ToolsetName

// checkRemoteToolsets fails when an agent allows a toolset that no tool
// server announced (a typo, or a server that is down at start).
func checkRemoteToolsets(want map[string]string, set runtime.Toolset, problems []error) error {
	have := map[string]bool{}
	for _, sp := range set.Specs() {
		if e, ok := set.Lookup(sp.Name); ok {
			have[e.Toolset] = true
		}
	}
	names := make([]string, 0, len(want))
	for n := range want {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if have[n] {
			continue
		}
		reason := fmt.Sprintf("no tool server announced a toolset named %q", n)
		if len(problems) > 0 {
			reason += fmt.Sprintf(" (%d toolsets could not be loaded; first: %v)", len(problems), problems[0])
		}
		return &ConfigError{Field: want[n], Reason: reason}
	}
	return nil
}

// buildAgents builds the agent set: every model an agent names, once.
func (s *Server) buildAgents(build func(name string) (runtime.Model, int, error)) error {
	if len(s.set.agents) == 0 {
		return nil
	}
	set, err := runtime.NewAgentSet(s.set.agents, s.set.defaultAgent, build)
	if err != nil {
		var ae *runtime.AgentError
		if errors.As(err, &ae) {
			return &ConfigError{Field: ae.Field, Reason: ae.Reason}
		}
		return fmt.Errorf("server: building the agents: %w", err)
	}
	s.agents = set
	return nil
}
