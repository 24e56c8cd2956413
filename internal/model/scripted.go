package model

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/agentslice/agentslice/internal/runtime"
)

// Script is a JSON script of model responses, so anyone can test an agent
// deterministically. Each thread plays its own list of steps (Threads[id],
// else Default); the step for a completion is the number of completions the
// thread has already committed, so a retried slice replays the same step.
//
//	{"default": [
//	   {"text": "Let me look.", "tool_call": {"name": "get_time", "args": {"tz": "UTC"}}},
//	   {"text": "It is noon."}
//	]}
type Script struct {
	Default []Step            `json:"default"`
	Threads map[string][]Step `json:"threads,omitempty"`
	// Match picks steps for threads whose IDs are derived (children): the
	// first rule whose Contains occurs in what the thread was started with
	// (its own items before its first completion) wins. Threads, then
	// Match, then Default.
	Match []MatchRule `json:"match,omitempty"`
}

// MatchRule selects steps by the text a thread was started with.
type MatchRule struct {
	Contains string `json:"contains"`
	Steps    []Step `json:"steps"`
}

// Step is one scripted completion.
type Step struct {
	Text      string    `json:"text,omitempty"`
	Reasoning string    `json:"reasoning,omitempty"`
	ToolCall  *StepCall `json:"tool_call,omitempty"`
	// ExtraCalls are streamed after ToolCall (the engine must drop them).
	ExtraCalls []StepCall `json:"extra_calls,omitempty"`
	// FailTimes makes the first n attempts of this step break mid-stream.
	FailTimes int `json:"fail_times,omitempty"`
	// Permanent makes the step fail with a non-retryable error.
	Permanent string `json:"permanent_error,omitempty"`
	// Usage is reported for the completion.
	Usage *runtime.Usage `json:"usage,omitempty"`
}

// StepCall is a scripted tool call; Args is any JSON value (usually an
// object), or RawArgs for a deliberately malformed argument string.
type StepCall struct {
	Name    string          `json:"name"`
	Args    json.RawMessage `json:"args,omitempty"`
	RawArgs string          `json:"raw_args,omitempty"`
}

// LoadScript reads and validates a script file.
func LoadScript(path string) (*Script, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("model: reading script: %w", err)
	}
	return ParseScript(b)
}

// ParseScript decodes and validates a script.
func ParseScript(b []byte) (*Script, error) {
	var s Script
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("model: parsing script: %w", err)
	}
	check := func(where string, steps []Step) error {
		for i, st := range steps {
			if st.ToolCall != nil && st.ToolCall.Name == "" {
				return fmt.Errorf("model: script %s step %d: tool_call without a name", where, i)
			}
		}
		return nil
	}
	if err := check("default", s.Default); err != nil {
		return nil, err
	}
	for id, steps := range s.Threads {
		if err := check("thread "+id, steps); err != nil {
			return nil, err
		}
	}
	for i, r := range s.Match {
		if r.Contains == "" {
			return nil, fmt.Errorf("model: script match rule %d has an empty contains", i)
		}
		if err := check(fmt.Sprintf("match %q", r.Contains), r.Steps); err != nil {
			return nil, err
		}
	}
	return &s, nil
}

// expand replaces placeholders in scripted arguments: $THREAD is the
// thread's ID, $CALL:name the ID of the latest call to tool name in the
// thread's view, $CHILD the latest thread spawned by this thread.
func expand(args string, req *runtime.CompletionRequest) string {
	if !strings.Contains(args, "$") {
		return args
	}
	args = strings.ReplaceAll(args, "$THREAD", req.ThreadID)
	for i := len(req.History) - 1; i >= 0; i-- {
		it := req.History[i]
		if it.Kind != runtime.ItemToolCall {
			continue
		}
		if ph := "$CALL:" + it.Name; strings.Contains(args, ph) {
			args = strings.ReplaceAll(args, ph, it.CallID)
		}
		if it.Name == "spawn_thread" && strings.Contains(args, "$CHILD") {
			args = strings.ReplaceAll(args, "$CHILD", runtime.ChildThreadID(req.ThreadID, it.CallID))
		}
	}
	return args
}

// Scripted plays a Script.
type Scripted struct {
	Script *Script

	mu       sync.Mutex
	failures map[string]int    // (thread, step) -> failed attempts so far
	chosen   map[string][]Step // thread -> its steps, fixed at its first completion
}

// NewScripted returns a model playing s.
func NewScripted(s *Script) *Scripted {
	return &Scripted{Script: s, failures: map[string]int{}, chosen: map[string][]Step{}}
}

// Complete streams the thread's next step.
func (m *Scripted) Complete(ctx context.Context, req *runtime.CompletionRequest, w runtime.TurnWriter) error {
	m.mu.Lock()
	steps, ok := m.chosen[req.ThreadID]
	if !ok {
		steps = m.Script.steps(req)
		m.chosen[req.ThreadID] = steps
	}
	m.mu.Unlock()
	n := req.Turn()
	if n >= len(steps) {
		return runtime.Permanent(fmt.Errorf("model: script for thread %s has %d steps; completion %d was asked for", req.ThreadID, len(steps), n+1))
	}
	st := steps[n]
	if st.Permanent != "" {
		return runtime.Permanent(fmt.Errorf("model: scripted error: %s", st.Permanent))
	}
	half := len(st.Text) / 2
	w.Reasoning(st.Reasoning)
	w.Text(st.Text[:half])
	if st.FailTimes > 0 {
		key := fmt.Sprintf("%s/%d", req.ThreadID, n)
		m.mu.Lock()
		failed := m.failures[key]
		if failed < st.FailTimes {
			m.failures[key] = failed + 1
		}
		m.mu.Unlock()
		if failed < st.FailTimes {
			return fmt.Errorf("%w (scripted, attempt %d of step %d)", ErrInjected, failed+1, n)
		}
	}
	w.Text(st.Text[half:])
	if st.Usage != nil {
		w.Usage(*st.Usage)
	}
	for _, c := range append(callsOf(st.ToolCall), st.ExtraCalls...) {
		args := string(c.Args)
		if c.RawArgs != "" {
			args = c.RawArgs
		}
		w.ToolCall("", c.Name, expand(args, req))
	}
	return nil
}

func (s *Script) steps(req *runtime.CompletionRequest) []Step {
	if steps, ok := s.Threads[req.ThreadID]; ok {
		return steps
	}
	if len(s.Match) > 0 {
		// What the thread was started with: its own items before its
		// first completion.
		var start strings.Builder
		for _, it := range req.History[req.Inherited:] {
			if it.Kind == runtime.ItemAssistant || (it.Kind == runtime.ItemToolCall && !runtime.IsSynthetic(&it)) {
				break
			}
			start.WriteString(it.Text)
			start.WriteByte('\n')
		}
		for _, r := range s.Match {
			if strings.Contains(start.String(), r.Contains) {
				return r.Steps
			}
		}
	}
	return s.Default
}

func callsOf(c *StepCall) []StepCall {
	if c == nil {
		return nil
	}
	return []StepCall{*c}
}
