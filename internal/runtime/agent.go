package runtime

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
)

// Agent is a named definition a thread runs as: its instructions (the
// system prompt), the catalog name of its model, the toolsets it may use and
// its limits. A definition is versioned by its content (Hash); a thread
// records the name and hash it is bound to in its state.
//
// Its JSON encoding is the shape of the "agents" entries of `agentslice
// serve`'s configuration and of deploy/agents.json.
type Agent struct {
	// Name is [A-Za-z0-9_-]{1,64}.
	Name string `json:"name"`
	// Instructions are the system prompt; never empty.
	Instructions string `json:"instructions"`
	// Model is a model catalog name; "" means the deployment's default.
	Model string `json:"model,omitempty"`
	// Tools is an allow-list of toolset names (a RAP toolset's announced
	// name, an MCP server's name, or a built-in group: ToolsetThreads,
	// ToolsetSleep). nil allows every toolset; an empty list allows none.
	Tools []string `json:"tools,omitempty"`
	// Limits, when set, override the deployment's for this agent's threads.
	Limits *AgentLimits `json:"limits,omitempty"`
	// Spawnable lists the agents spawn_thread may start with its agent
	// argument. Empty means the agent itself only.
	Spawnable []string `json:"spawnable,omitempty"`
	// Priority is the default priority class of the agent's threads:
	// "interactive", "background" or "" (the deployment's default).
	Priority string `json:"priority,omitempty"`
	// Budget, when set, is the limit of each thread of the agent that
	// sets none of its own (budget.go).
	Budget *Budget `json:"budget,omitempty"`
	// Network is the network access of the agent's commands in the
	// sandbox toolset (docs/sandbox.md): "ask" (or "", the default: a
	// command that asks for the network asks the person first), "allow"
	// (the jail lets them use it) or "deny" (refused without asking).
	Network string `json:"network,omitempty"`
}

// The network access values an Agent's Network may take.
const (
	NetworkAsk   = "ask"
	NetworkAllow = "allow"
	NetworkDeny  = "deny"
)

// AgentLimits are per-agent overrides of the engine's limits. Zero means
// the engine's value.
type AgentLimits struct {
	// MaxCompletions caps the completions of one slice.
	MaxCompletions int `json:"max_completions,omitempty"`
	// CompactionThreshold is the fraction of the context window at which
	// the thread is summarised (0 < t < 1).
	CompactionThreshold float64 `json:"compaction_threshold,omitempty"`
}

// The built-in toolset groups an Agent's Tools may name.
const (
	ToolsetThreads = "threads" // spawn_thread, report_to_parent, close_thread, ...
	ToolsetSleep   = "sleep"   // sleep, sleep_until, sleep_until_event_or_input
)

// The priority classes an Agent may name.
const (
	PriorityInteractive = "interactive"
	PriorityBackground  = "background"
)

// MaxAgentNameLen bounds an agent's name.
const MaxAgentNameLen = 64

var agentNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// ValidAgentName reports whether name matches [A-Za-z0-9_-]{1,64}.
func ValidAgentName(name string) bool { return agentNameRE.MatchString(name) }

// AgentError reports an agent definition that cannot work. Field is the
// path of the value at fault relative to the definition ("instructions",
// "spawnable[1]"), or to the list of definitions when Index >= 0.
type AgentError struct {
	Agent  string // the agent's name, "" when unknown
	Field  string
	Reason string
}

func (e *AgentError) Error() string {
	var b strings.Builder
	b.WriteString("agent")
	if e.Agent != "" {
		fmt.Fprintf(&b, " %q", e.Agent)
	}
	if e.Field != "" {
		fmt.Fprintf(&b, ": field %q", e.Field)
	}
	b.WriteString(": ")
	b.WriteString(e.Reason)
	return b.String()
}

// Validate checks what a definition says on its own (not what it refers
// to: see ValidateAgents) and returns an *AgentError naming the field.
func (a *Agent) Validate() error {
	bad := func(field, format string, args ...any) error {
		return &AgentError{Agent: a.Name, Field: field, Reason: fmt.Sprintf(format, args...)}
	}
	if !ValidAgentName(a.Name) {
		return bad("name", "%q must be 1 to %d characters of letters, digits, _ and -", a.Name, MaxAgentNameLen)
	}
	if strings.TrimSpace(a.Instructions) == "" {
		return bad("instructions", "empty: an agent needs instructions")
	}
	if strings.IndexFunc(a.Model, func(r rune) bool { return r == ' ' || r == '\t' || r == '\n' }) >= 0 {
		return bad("model", "%q contains white space", a.Model)
	}
	for i, t := range a.Tools {
		if strings.TrimSpace(t) == "" {
			return bad(fmt.Sprintf("tools[%d]", i), "empty toolset name")
		}
		if slices.Index(a.Tools, t) != i {
			return bad(fmt.Sprintf("tools[%d]", i), "%q is listed twice", t)
		}
	}
	if l := a.Limits; l != nil {
		if l.MaxCompletions < 0 {
			return bad("limits.max_completions", "must not be negative (got %d; 0 means the default)", l.MaxCompletions)
		}
		if t := l.CompactionThreshold; t < 0 || t >= 1 {
			return bad("limits.compaction_threshold", "%v is not a fraction between 0 and 1 (0 means the default)", t)
		}
	}
	for i, s := range a.Spawnable {
		if !ValidAgentName(s) {
			return bad(fmt.Sprintf("spawnable[%d]", i), "%q is not an agent name", s)
		}
	}
	if b := a.Budget; b != nil {
		if err := b.Validate("budget"); err != nil {
			return &AgentError{Agent: a.Name, Field: "budget", Reason: err.Error()}
		}
	}
	switch a.Priority {
	case "", PriorityInteractive, PriorityBackground:
	default:
		return bad("priority", "unknown class %q (want %q or %q)", a.Priority, PriorityInteractive, PriorityBackground)
	}
	switch a.Network {
	case "", NetworkAsk, NetworkAllow, NetworkDeny:
	default:
		return bad("network", "%q is not one of %q, %q, %q", a.Network, NetworkAsk, NetworkAllow, NetworkDeny)
	}
	return nil
}

// Hash is the definition's content version: the hex SHA-256 of its
// canonical JSON encoding (fields in declaration order, no HTML escaping),
// cut to 16 bytes. Equal definitions hash equally in every process.
func (a *Agent) Hash() string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(a) // a struct of strings, numbers and slices cannot fail
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:16])
}

// CanSpawn reports whether a's spawn_thread may start an agent named name.
func (a *Agent) CanSpawn(name string) bool {
	if len(a.Spawnable) == 0 {
		return name == a.Name
	}
	return slices.Contains(a.Spawnable, name)
}

// AllowsToolset reports whether a may use the tools of the named toolset.
func (a *Agent) AllowsToolset(toolset string) bool {
	return a.Tools == nil || slices.Contains(a.Tools, toolset)
}

// AgentVersion is one version of a definition as the engine runs it.
type AgentVersion struct {
	Agent Agent
	// Hash is Agent.Hash().
	Hash string
	// Model runs the agent's completions; nil means Engine.Model.
	Model Model
	// ContextWindow is the model's context window in tokens, for
	// compaction; 0 means the engine's CompactionPolicy.ContextWindow.
	ContextWindow int
}

// Agents resolves agent definitions for the engine. It must be safe for
// concurrent use. Implemented by *AgentSet.
type Agents interface {
	// Agent returns the current version of the agent named name, or of the
	// default agent when name is "". ok is false when there is none.
	Agent(name string) (v *AgentVersion, ok bool)
}

// ModelResolver returns the model a catalog name stands for ("" is the
// default model) with its context window in tokens.
type ModelResolver func(name string) (m Model, contextWindow int, err error)

// AgentSet is a validated set of definitions with a default. Replace swaps
// the set atomically (a configuration reload); threads see the new
// versions from their next slice on.
type AgentSet struct {
	models ModelResolver
	cur    atomic.Pointer[agentSnapshot]
	// kept are the versions current earlier in this process and those
	// given to Keep (agent_versions.go).
	kept keptVersions
}

type agentSnapshot struct {
	byName map[string]*AgentVersion
	def    string
}

// NewAgentSet validates defs (ValidateAgents) and resolves their models.
// models may be nil: every version then runs Engine.Model.
func NewAgentSet(defs []Agent, defaultAgent string, models ModelResolver) (*AgentSet, error) {
	s := &AgentSet{models: models}
	if err := s.Replace(defs, defaultAgent); err != nil {
		return nil, err
	}
	return s, nil
}

// Replace validates and installs a new set of definitions. On error the
// current set stays.
func (s *AgentSet) Replace(defs []Agent, defaultAgent string) error {
	if err := ValidateAgents(defs, defaultAgent); err != nil {
		return err
	}
	if defaultAgent == "" {
		defaultAgent = defs[0].Name // ValidateAgents allows this for one agent only
	}
	snap := &agentSnapshot{byName: make(map[string]*AgentVersion, len(defs)), def: defaultAgent}
	for i := range defs {
		a := defs[i]
		a.Tools = slices.Clone(a.Tools)
		a.Spawnable = slices.Clone(a.Spawnable)
		if a.Limits != nil {
			l := *a.Limits
			a.Limits = &l
		}
		v := &AgentVersion{Agent: a, Hash: a.Hash()}
		if s.models != nil {
			m, cw, err := s.models(a.Model)
			if err != nil {
				return &AgentError{Agent: a.Name, Field: fmt.Sprintf("agents[%d].model", i), Reason: err.Error()}
			}
			v.Model, v.ContextWindow = m, cw
		}
		snap.byName[a.Name] = v
	}
	if old := s.cur.Load(); old != nil {
		for _, v := range old.byName {
			s.keep(v) // a pinned thread may still run it
		}
	}
	s.cur.Store(snap)
	return nil
}

// Agent implements Agents.
func (s *AgentSet) Agent(name string) (*AgentVersion, bool) {
	snap := s.cur.Load()
	if name == "" {
		name = snap.def
	}
	v, ok := snap.byName[name]
	return v, ok
}

// Default returns the default agent's name.
func (s *AgentSet) Default() string { return s.cur.Load().def }

// Names returns the defined agents' names, sorted.
func (s *AgentSet) Names() []string {
	snap := s.cur.Load()
	out := make([]string, 0, len(snap.byName))
	for n := range snap.byName {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// ValidateAgents checks every definition, that names are unique, that
// spawnable names defined agents and that defaultAgent is one of them. Errors
// are *AgentError values whose Field is a path from the list
// ("agents[1].spawnable[0]", "default_agent").
func ValidateAgents(defs []Agent, defaultAgent string) error {
	if len(defs) == 0 {
		return &AgentError{Field: "agents", Reason: "empty: define at least one agent"}
	}
	seen := make(map[string]bool, len(defs))
	for i := range defs {
		a := &defs[i]
		if err := a.Validate(); err != nil {
			ae := err.(*AgentError)
			ae.Field = fmt.Sprintf("agents[%d].%s", i, ae.Field)
			return ae
		}
		if seen[a.Name] {
			return &AgentError{Agent: a.Name, Field: fmt.Sprintf("agents[%d].name", i), Reason: "defined twice"}
		}
		seen[a.Name] = true
	}
	for i := range defs {
		for j, s := range defs[i].Spawnable {
			if !seen[s] {
				return &AgentError{Agent: defs[i].Name, Field: fmt.Sprintf("agents[%d].spawnable[%d]", i, j),
					Reason: fmt.Sprintf("%q is not a defined agent", s)}
			}
		}
	}
	if defaultAgent == "" {
		if len(defs) == 1 {
			return nil
		}
		return &AgentError{Field: "default_agent", Reason: "missing: name the agent threads run as when their first message names none"}
	}
	if !seen[defaultAgent] {
		return &AgentError{Field: "default_agent", Reason: fmt.Sprintf("%q is not a defined agent", defaultAgent)}
	}
	return nil
}
