package model

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentslice/agentslice/internal/runtime"
)

type rec struct {
	text, reasoning strings.Builder
	calls           []string
}

func (r *rec) Text(s string)                  { r.text.WriteString(s) }
func (r *rec) Reasoning(s string)             { r.reasoning.WriteString(s) }
func (r *rec) ToolCall(id, name, args string) { r.calls = append(r.calls, name+" "+args) }
func (r *rec) Usage(runtime.Usage)            {}

func TestSimPolicy(t *testing.T) {
	m := &Sim{Chunks: 2, Tool: "run_command", ToolArgs: `{"x":1}`}
	var r rec
	req := &runtime.CompletionRequest{History: []runtime.Item{{Kind: runtime.ItemUser, Text: "go"}}}
	if err := m.Complete(context.Background(), req, &r); err != nil {
		t.Fatal(err)
	}
	if r.text.String() != DefaultSentence+DefaultSentence || len(r.calls) != 1 {
		t.Fatalf("after a user message: text %q calls %v", r.text.String(), r.calls)
	}
	r = rec{}
	req.History = append(req.History, runtime.Item{Kind: runtime.ItemToolCall}, runtime.Item{Kind: runtime.ItemToolResult})
	if err := m.Complete(context.Background(), req, &r); err != nil || len(r.calls) != 0 {
		t.Fatalf("after a tool result: calls %v err %v", r.calls, err)
	}
	m.Fail = func(*runtime.CompletionRequest, int) bool { return true }
	if err := m.Complete(context.Background(), req, &rec{}); !errors.Is(err, ErrInjected) {
		t.Fatalf("injected failure: %v", err)
	}
}

func TestScriptParsing(t *testing.T) {
	if _, err := ParseScript([]byte(`{"default":[{"tool_call":{"args":{}}}]}`)); err == nil || !strings.Contains(err.Error(), "without a name") {
		t.Fatalf("unnamed tool call: %v", err)
	}
	if _, err := ParseScript([]byte(`{"default":[{"txt":"typo"}]}`)); err == nil {
		t.Fatal("unknown field accepted")
	}
	s, err := LoadScript("testdata/script.json")
	if err != nil {
		t.Fatal(err)
	}
	m := NewScripted(s)
	var r rec
	req := &runtime.CompletionRequest{ThreadID: "t", History: []runtime.Item{{Kind: runtime.ItemUser, Text: "hi"}}}
	if err := m.Complete(context.Background(), req, &r); err != nil || len(r.calls) != 1 || !strings.HasPrefix(r.calls[0], "get_time ") {
		t.Fatalf("step 0: %v %v", r.calls, err)
	}
	req.History = append(req.History, runtime.Item{Kind: runtime.ItemAssistant}, runtime.Item{Kind: runtime.ItemToolCall, CallID: "c"}, runtime.Item{Kind: runtime.ItemToolResult, CallID: "c"})
	r = rec{}
	req.SetTurn(1)
	if err := m.Complete(context.Background(), req, &r); err != nil || r.text.String() != "It is noon in UTC." {
		t.Fatalf("step 1: %q %v", r.text.String(), err)
	}
	req.SetTurn(2)
	if err := m.Complete(context.Background(), req, &rec{}); !runtime.IsPermanent(err) {
		t.Fatalf("exhausted script: %v", err)
	}
}

func TestCatalogBuildsSimAndScripted(t *testing.T) {
	m, err := FromConfig(context.Background(), Config{Provider: ProviderSim, ModelID: "sim", ContextWindow: 1000, MaxOutputTokens: 100,
		Sim: &SimConfig{Chunks: 1}})
	if _, ok := m.(*Sim); err != nil || !ok {
		t.Fatalf("sim: %T %v", m, err)
	}
	m, err = FromConfig(context.Background(), Config{Provider: ProviderScripted, ModelID: "script", ContextWindow: 1000, MaxOutputTokens: 100,
		Scripted: &ScriptedConfig{Path: "testdata/script.json"}})
	if _, ok := m.(*Scripted); err != nil || !ok {
		t.Fatalf("scripted: %T %v", m, err)
	}
	_, err = FromConfig(context.Background(), Config{Provider: ProviderScripted, ModelID: "script", ContextWindow: 1000, MaxOutputTokens: 100})
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Field != "scripted" {
		t.Fatalf("scripted without a script: %v", err)
	}
}

func TestSimSeed(t *testing.T) {
	text := func(seed uint64, id string) string {
		var r rec
		m := &Sim{Chunks: 6, Seed: seed}
		req := &runtime.CompletionRequest{}
		req.SetID(id)
		if err := m.Complete(context.Background(), req, &r); err != nil {
			t.Fatal(err)
		}
		return r.text.String()
	}
	if text(7, "c1") != text(7, "c1") {
		t.Fatal("same seed and completion gave different text")
	}
	if text(7, "c1") == text(8, "c1") && text(7, "c2") == text(8, "c2") {
		t.Fatal("different seeds gave the same text")
	}
}
