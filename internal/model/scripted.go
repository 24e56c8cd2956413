package model

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
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
	return &s, nil
}

// Scripted plays a Script.
type Scripted struct {
	Script *Script

	mu       sync.Mutex
	failures map[string]int // (thread, step) -> failed attempts so far
}

// NewScripted returns a model playing s.
func NewScripted(s *Script) *Scripted { return &Scripted{Script: s, failures: map[string]int{}} }

// Complete streams the thread's next step.
func (m *Scripted) Complete(ctx context.Context, req *runtime.CompletionRequest, w runtime.TurnWriter) error {
	steps, ok := m.Script.Threads[req.ThreadID]
	if !ok {
		steps = m.Script.Default
	}
	n := Completions(req.History[req.Inherited:])
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
	for _, c := range append(callsOf(st.ToolCall), st.ExtraCalls...) {
		args := string(c.Args)
		if c.RawArgs != "" {
			args = c.RawArgs
		}
		w.ToolCall("", c.Name, args)
	}
	return nil
}

func callsOf(c *StepCall) []StepCall {
	if c == nil {
		return nil
	}
	return []StepCall{*c}
}

// Completions counts the completions a thread has committed in its own part
// of the history: every assistant item, and every tool call not directly
// after an assistant item (a completion that only called a tool). Injected
// events are not completions.
func Completions(h []runtime.Item) int {
	n := 0
	for i, it := range h {
		switch {
		case it.Kind == runtime.ItemAssistant:
			n++
		case it.Kind == runtime.ItemToolCall && !runtime.IsSynthetic(&it):
			if i == 0 || h[i-1].Kind != runtime.ItemAssistant {
				n++
			}
		}
	}
	return n
}
