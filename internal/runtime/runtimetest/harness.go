// Package runtimetest has helpers for tests of the slice engine and its
// bindings: recording tools, a transcript renderer and history checks.
// It is imported only by tests.
package runtimetest

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/agentslice/agentslice/internal/runtime"
)

// RecordingTool is an asynchronous tool that records every dispatch. When
// Reply is set it answers each call through Queue, as a real tool answers
// through the callback receiver.
type RecordingTool struct {
	Queue runtime.Queue
	Reply func(inv runtime.Invocation) (text string, ok bool)
	// FailNext makes the next n dispatches fail transiently.
	FailNext int
	// Reject makes every dispatch fail for good.
	Reject string

	mu    sync.Mutex
	calls []runtime.Invocation
	hook  func(inv runtime.Invocation)
}

// OnDispatch sets a function called at the start of every dispatch.
func (t *RecordingTool) OnDispatch(f func(inv runtime.Invocation)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.hook = f
}

// Dispatch records inv and answers when Reply says so.
func (t *RecordingTool) Dispatch(ctx context.Context, inv runtime.Invocation) error {
	t.mu.Lock()
	hook := t.hook
	t.calls = append(t.calls, inv)
	fail := t.FailNext > 0
	if fail {
		t.FailNext--
	}
	t.mu.Unlock()
	if hook != nil {
		hook(inv)
	}
	if fail {
		return fmt.Errorf("recording tool: injected transient failure for %s", inv.CallID)
	}
	if t.Reject != "" {
		return &runtime.ToolRejectedError{Tool: inv.Name, Reason: t.Reject}
	}
	if t.Reply != nil {
		if text, ok := t.Reply(inv); ok {
			return t.Queue.Send(ctx, runtime.Message{V: 1, ID: runtime.ResultID(inv.ThreadID, inv.CallID),
				ThreadID: inv.ThreadID, Kind: runtime.KindToolResult, ToolCallID: inv.CallID, Text: text})
		}
	}
	return nil
}

// Calls returns the dispatches so far.
func (t *RecordingTool) Calls() []runtime.Invocation {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]runtime.Invocation(nil), t.calls...)
}

// SyncFunc adapts a function to runtime.SyncTool.
type SyncFunc func(ctx context.Context, env *runtime.SyncEnv, inv runtime.Invocation) (runtime.ToolOutput, error)

// Run calls f.
func (f SyncFunc) Run(ctx context.Context, env *runtime.SyncEnv, inv runtime.Invocation) (runtime.ToolOutput, error) {
	return f(ctx, env, inv)
}

// Transcript renders items as indented JSON, for golden files and diffs.
func Transcript(items []runtime.Item) string {
	b, err := json.MarshalIndent(items, "", "  ")
	if err != nil {
		return "transcript: " + err.Error()
	}
	return string(b) + "\n"
}

// CheckOneResultPerCall returns an error unless every tool call in items is
// followed by exactly one result with its ID, with no other tool call in
// between (what model APIs require), and every result belongs to a call.
func CheckOneResultPerCall(items []runtime.Item) error {
	open := ""
	results := map[string]int{}
	calls := map[string]bool{}
	for i, it := range items {
		switch it.Kind {
		case runtime.ItemToolCall:
			if open != "" {
				return fmt.Errorf("item %d: call %s starts while call %s has no result", i, it.CallID, open)
			}
			if calls[it.CallID] {
				return fmt.Errorf("item %d: call ID %s used twice", i, it.CallID)
			}
			calls[it.CallID] = true
			open = it.CallID
		case runtime.ItemToolResult:
			if !calls[it.CallID] {
				return fmt.Errorf("item %d: result for unknown call %s", i, it.CallID)
			}
			results[it.CallID]++
			if results[it.CallID] > 1 {
				return fmt.Errorf("item %d: second result for call %s", i, it.CallID)
			}
			if open == it.CallID {
				open = ""
			}
		case runtime.ItemUser, runtime.ItemAssistant:
			if open != "" {
				return fmt.Errorf("item %d: %s item while call %s has no result", i, it.Kind, open)
			}
		}
	}
	return nil
}

// CountingModel wraps a model and counts completions per thread.
type CountingModel struct {
	runtime.Model
	mu sync.Mutex
	n  map[string]int
}

// Complete counts and delegates.
func (m *CountingModel) Complete(ctx context.Context, req *runtime.CompletionRequest, w runtime.TurnWriter) error {
	m.mu.Lock()
	if m.n == nil {
		m.n = map[string]int{}
	}
	m.n[req.ThreadID]++
	m.mu.Unlock()
	return m.Model.Complete(ctx, req, w)
}

// Count returns the completions requested for a thread.
func (m *CountingModel) Count(thread string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.n[thread]
}
