package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// This file is how a slice runs as its thread's agent (see Agent):
//
//   - binding: a thread's first user message may name an agent; a thread
//     bound to none when its first completion runs is bound to the default
//     agent. Children are bound when they are created (spawn_thread, a
//     threaded event, compaction). The binding is part of the state the
//     slice commits, so a retried slice sees what the first attempt
//     committed.
//   - versions: before its first completion a slice compares the current
//     definition's hash with the state's; when they differ it appends a
//     marker item saying which version now applies and records the hash,
//     in the same commit as the turn. The model never sees the marker.
//   - use: the version's instructions are the system prompt, its model runs
//     the completion, its Tools allow-list filters the toolset, its limits
//     override the engine's.

// AgentMarkerName is the Name of the marker item recording that a thread's
// agent definition changed version.
const AgentMarkerName = "agent"

// agentMarker is the Args of an agent marker item.
type agentMarker struct {
	Agent    string `json:"agent"`
	Hash     string `json:"hash"`
	Previous string `json:"previous,omitempty"`
}

// agentState is a slice's view of its agent.
type agentState struct {
	v       *AgentVersion
	applied bool // the version was checked against the state (applyAgent)
}

// resolveAgent returns the current version of the thread's agent without
// changing anything; nil when the engine has no agents. An error means the
// thread's agent is not defined (any more).
func (s *slice) resolveAgent() (*AgentVersion, error) {
	if s.e.Agents == nil {
		return nil, nil
	}
	if s.agent.v != nil {
		return s.agent.v, nil
	}
	if v, pinned, err := s.pinnedAgent(); pinned {
		if err == nil {
			s.agent.v = v
		}
		return v, err
	}
	v, ok := s.e.Agents.Agent(s.st.Agent)
	if !ok {
		name := s.st.Agent
		if name == "" {
			return nil, Permanent(fmt.Errorf("runtime: thread %s names no agent and no default agent is defined", s.threadID))
		}
		return nil, Permanent(fmt.Errorf("runtime: thread %s is bound to agent %q, which is not defined any more", s.threadID, name))
	}
	s.agent.v = v
	return v, nil
}

// applyAgent binds an unbound thread to its agent and records a change of
// version in history. It runs once per slice, before the first completion,
// and applies the version's limits.
func (s *slice) applyAgent() (*AgentVersion, error) {
	v, err := s.resolveAgent()
	if err != nil || v == nil || s.agent.applied {
		return v, err
	}
	s.agent.applied = true
	s.res.Agent = v.Agent.Name
	if s.version == 0 && s.st.Parent == "" && !s.classNamed && v.Agent.Priority != "" {
		// A new root thread no message gave a class: its agent's default.
		s.st.Class = Class(v.Agent.Priority)
		s.changed()
	}
	switch {
	case s.st.Agent == "":
		s.st.Agent, s.st.AgentHash = v.Agent.Name, v.Hash
		s.changed()
	case s.st.AgentHash == "":
		s.st.AgentHash = v.Hash // bound by a message or a creator that left the version to us
		s.changed()
	case s.st.AgentHash != v.Hash:
		args, _ := json.Marshal(agentMarker{Agent: v.Agent.Name, Hash: v.Hash, Previous: s.st.AgentHash})
		s.appendItem(Item{Kind: ItemMarker, Name: AgentMarkerName, Args: string(args),
			Text: fmt.Sprintf("agent %s: definition version %s now applies (was %s)", v.Agent.Name, v.Hash, s.st.AgentHash)})
		s.st.AgentHash = v.Hash
	}
	if l := v.Agent.Limits; l != nil && l.MaxCompletions > 0 {
		s.lim.MaxCompletions = l.MaxCompletions
	}
	return v, nil
}

// acceptAgent checks the agent a user message names against the thread's
// binding, binding an unbound thread. It rejects the message (reporting
// false) for an unknown agent or one the thread is not bound to.
func (s *slice) acceptAgent(ctx context.Context, m Message) bool {
	bad := func(format string, args ...any) bool {
		s.reject(ctx, m.ID, &BadMessageError{ID: m.ID, Field: "agent", Reason: fmt.Sprintf(format, args...)})
		return false
	}
	if s.e.Agents == nil {
		return bad("names agent %q, but this deployment defines no agents", m.Agent)
	}
	if _, ok := s.e.Agents.Agent(m.Agent); !ok {
		return bad("unknown agent %q", m.Agent)
	}
	switch s.st.Agent {
	case "":
		s.st.Agent, s.st.AgentHash = m.Agent, ""
		s.agent, s.toolset = agentState{}, nil // resolved again for the agent now bound
		s.changed()
	case m.Agent:
	default:
		return bad("thread %s runs as agent %q; a message cannot switch it to %q", s.threadID, s.st.Agent, m.Agent)
	}
	return true
}

// agentModel returns the model the thread's agent runs.
func (s *slice) agentModel(v *AgentVersion) Model {
	if v != nil && v.Model != nil {
		return v.Model
	}
	return s.e.Model
}

// compactionWindow returns the context window and threshold compaction
// uses for the thread's agent.
func (s *slice) compactionWindow(p *CompactionPolicy) (window int, threshold float64) {
	window, threshold = p.ContextWindow, p.Threshold
	if v := s.agent.v; v != nil {
		if v.ContextWindow > 0 {
			window = v.ContextWindow
		}
		if l := v.Agent.Limits; l != nil && l.CompactionThreshold > 0 {
			threshold = l.CompactionThreshold
		}
	}
	return window, threshold
}

// agentToolset is a toolset seen through an agent's Tools allow-list.
type agentToolset struct {
	inner Toolset
	agent *Agent
	specs []ToolSpec
	// missing lists the allowed toolsets the toolset holds no tool of (a
	// server down, for now): the model is told they are unavailable.
	missing []string
}

func filterToolset(ts Toolset, a *Agent) Toolset {
	if a.Tools == nil {
		return ts
	}
	f := &agentToolset{inner: ts, agent: a}
	seen := make(map[string]bool, len(a.Tools))
	for _, sp := range ts.Specs() {
		if e, ok := f.Lookup(sp.Name); ok {
			f.specs = append(f.specs, sp)
			seen[e.Toolset] = true
		}
	}
	for _, name := range a.Tools {
		if !seen[name] {
			f.missing = append(f.missing, name)
		}
	}
	return f
}

// unavailableNote is what the system prompt gets for allowed toolsets
// that could not be loaded, so the model knows why their tools are
// missing instead of taking them for unknown; "" when none are missing.
func unavailableNote(ts Toolset) string {
	f, ok := ts.(*agentToolset)
	if !ok || len(f.missing) == 0 {
		return ""
	}
	return fmt.Sprintf("\n\n(Runtime note: the toolset(s) %s you may use are unavailable right now, because their server could not be reached; they will be retried, so their tools may be offered again later.)",
		strings.Join(f.missing, ", "))
}

func (t *agentToolset) Lookup(name string) (ToolEntry, bool) {
	e, ok := t.inner.Lookup(name)
	if !ok || !t.agent.AllowsToolset(e.Toolset) {
		return ToolEntry{}, false
	}
	return e, true
}

func (t *agentToolset) Specs() []ToolSpec { return t.specs }
