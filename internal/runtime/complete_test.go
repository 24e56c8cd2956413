package runtime_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentslice/agentslice/internal/local"
	"github.com/agentslice/agentslice/internal/runtime"
)

// usageOnce reports usage (Total 1000) on its first completion only, as a
// provider whose usage report is sometimes missing.
type usageOnce struct{ n atomic.Int32 }

func (m *usageOnce) Complete(_ context.Context, _ *runtime.CompletionRequest, w runtime.TurnWriter) error {
	w.Text("ok")
	if m.n.Add(1) == 1 {
		w.Usage(runtime.Usage{Input: 900, Output: 100, Total: 1000})
	}
	return nil
}

// A thread's Tokens (what compaction decides by) is the last token count a
// completion reported: a completion that reports none leaves it as it was,
// rather than telling compaction the context is empty (complete.go,
// `usage.Total > 0`).
func TestCompletionWithoutUsageKeepsTheTokenCount(t *testing.T) {
	t.Parallel()
	store := local.NewHistoryStore()
	e, _ := newEngine(store, &usageOnce{})
	ctx := context.Background()
	for _, id := range []string{"u1", "u2"} {
		if _, err := e.RunSlice(ctx, runtime.SliceInput{ThreadID: "t", Messages: []runtime.Message{userMsg("t", id)}}); err != nil {
			t.Fatal(err)
		}
	}
	th, err := store.Load(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	if th.State.Tokens != 1000 {
		t.Fatalf("Tokens after a completion with usage then one without: %d, want the reported 1000", th.State.Tokens)
	}
}

// nilSource is a tool source that answers err and no toolset.
type nilSource struct{ err error }

func (s nilSource) Toolset(context.Context, *runtime.Thread) (runtime.Toolset, error) {
	return nil, s.err
}

// A tool source that fails fails the slice with its own error (the cause
// kept for errors.Is), and one that answers neither a toolset nor an error
// fails it with an error that says so, not a nil dereference
// (complete.go's toolsetFor).
func TestToolSourceWithoutToolsetFailsTheSlice(t *testing.T) {
	t.Parallel()
	down := errors.New("tool servers unreachable")
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"error", down, down.Error()},
		{"neither", nil, "the tool source returned no toolset"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, _ := newEngine(local.NewHistoryStore(), &sysModel{name: "m"})
			e.Tools = nilSource{tc.err}
			_, err := e.RunSlice(context.Background(), runtime.SliceInput{ThreadID: "t", Messages: []runtime.Message{userMsg("t", "u1")}})
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "panicked") {
				t.Fatalf("slice error %v, want one that says %q", err, tc.want)
			}
			if tc.err != nil && !errors.Is(err, tc.err) {
				t.Fatalf("slice error %v does not wrap the tool source's %v", err, tc.err)
			}
		})
	}
}

// strictTool is a synchronous tool that validates its arguments: it wants
// a "path".
type strictTool struct{ ran atomic.Int32 }

func (s *strictTool) ValidateArgs(args string) error {
	if !strings.Contains(args, `"path"`) {
		return errors.New("path is required")
	}
	return nil
}

func (s *strictTool) Run(context.Context, *runtime.SyncEnv, runtime.Invocation) (runtime.ToolOutput, error) {
	s.ran.Add(1)
	return runtime.ToolOutput{Text: "read"}, nil
}

// A synchronous tool's ArgsValidator runs before the tool: invalid
// arguments get an error result that says why, and the tool does not run
// (complete.go's runCall).
func TestSyncToolArgsAreValidated(t *testing.T) {
	t.Parallel()
	store := local.NewHistoryStore()
	e, _ := newEngine(store, &sysModel{name: "m"})
	tool := &strictTool{}
	e.Tools.(*runtime.Toolbox).MustAdd(runtime.ToolEntry{Spec: runtime.ToolSpec{Name: "read"}, Sync: tool})
	ctx := context.Background()
	msg := userMsg("t", "u1")
	msg.Text = `call read {"file":"x"}`
	if _, err := e.RunSlice(ctx, runtime.SliceInput{ThreadID: "t", Messages: []runtime.Message{msg}}); err != nil {
		t.Fatal(err)
	}
	th, err := store.Load(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	res := resultOf(th.Items)
	if res == nil || !res.IsError || res.Text != "error: invalid arguments for read: path is required" {
		t.Fatalf("result %+v, want the validator's refusal", res)
	}
	if n := tool.ran.Load(); n != 0 {
		t.Fatalf("the tool ran %d times on arguments its validator refuses", n)
	}
}

// A call to a tool that is not in the toolset gets an error result that
// lists the tools there are, comma separated (toolNames).
func TestUnknownToolResultListsTheTools(t *testing.T) {
	t.Parallel()
	store := local.NewHistoryStore()
	e, _ := newEngine(store, &sysModel{name: "m"})
	e.Tools.(*runtime.Toolbox).MustAdd(runtime.ToolEntry{Spec: runtime.ToolSpec{Name: "read"}, Sync: &strictTool{}})
	ctx := context.Background()
	msg := userMsg("t", "u1")
	msg.Text = `call nosuch {}`
	if _, err := e.RunSlice(ctx, runtime.SliceInput{ThreadID: "t", Messages: []runtime.Message{msg}}); err != nil {
		t.Fatal(err)
	}
	th, err := store.Load(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	res := resultOf(th.Items)
	if want := `error: unknown tool "nosuch"; available tools: echo, read`; res == nil || !res.IsError || res.Text != want {
		t.Fatalf("result %+v, want %q", res, want)
	}
}

// resultOf is the first tool result in items, or nil.
func resultOf(items []runtime.Item) *runtime.Item {
	for i := range items {
		if items[i].Kind == runtime.ItemToolResult {
			return &items[i]
		}
	}
	return nil
}

// flakyForever fails every call with a retryable error; from its tenth
// call it fails permanently, so that a retry loop that ignored its bound
// ends (and the test fails by assertion instead of hanging).
type flakyForever struct{ n atomic.Int32 }

func (m *flakyForever) Complete(context.Context, *runtime.CompletionRequest, runtime.TurnWriter) error {
	if m.n.Add(1) >= 10 {
		return runtime.Permanent(errors.New("the retry loop ran past its attempts"))
	}
	return errors.New("HTTP 503: overloaded")
}

// A completion that keeps failing is tried Limits.ModelAttempts times, no
// more, and the error says how many (complete.go's retry loop).
func TestModelAttemptsBoundTheRetries(t *testing.T) {
	t.Parallel()
	m := &flakyForever{}
	e, _ := newEngine(local.NewHistoryStore(), m)
	e.Limits.ModelAttempts = 3
	res, err := e.RunSlice(context.Background(), runtime.SliceInput{ThreadID: "t", Messages: []runtime.Message{userMsg("t", "u1")}})
	if n := m.n.Load(); n != 3 {
		t.Fatalf("the model was called %d times, want ModelAttempts = 3 (slice %+v, %v)", n, res, err)
	}
	got := err
	if got == nil && res != nil {
		got = res.ModelErr
	}
	if got == nil || !strings.Contains(got.Error(), "after 3 attempts") {
		t.Fatalf("slice error %v, ModelErr %v: want one that says it failed after 3 attempts", err, res.ModelErr)
	}
}

// outputs records the output events it is given.
type outputs struct {
	mu  sync.Mutex
	evs []runtime.OutputEvent
}

func (o *outputs) Publish(_ context.Context, ev runtime.OutputEvent) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.evs = append(o.evs, ev)
	return nil
}

// A reply carries the thread's usage so far (the sum over its
// completions), and none when no completion reported any.
func TestReplyCarriesTheThreadsUsage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		model runtime.Model
		want  *runtime.Usage
	}{
		{"reported", &sysModel{name: "m"}, &runtime.Usage{Input: 10, Output: 2, Cached: 3, CacheWrite: 1, Total: 12}},
		{"none", &echoText{}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, _ := newEngine(local.NewHistoryStore(), tc.model)
			out := &outputs{}
			e.Output = out
			if _, err := e.RunSlice(context.Background(), runtime.SliceInput{ThreadID: "t", Messages: []runtime.Message{userMsg("t", "u1")}}); err != nil {
				t.Fatal(err)
			}
			if len(out.evs) != 1 || out.evs[0].Kind != "reply" {
				t.Fatalf("output events %+v, want one reply", out.evs)
			}
			if got := out.evs[0].Usage; (got == nil) != (tc.want == nil) || (got != nil && *got != *tc.want) {
				t.Fatalf("reply usage %+v, want %+v", got, tc.want)
			}
		})
	}
}

// echoText answers "ok" and reports no usage.
type echoText struct{}

func (echoText) Complete(_ context.Context, _ *runtime.CompletionRequest, w runtime.TurnWriter) error {
	w.Text("ok")
	return nil
}

// reasoner streams reasoning and text, then, when asked, a tool call
// followed by more reasoning (which is dropped with the call's trailing
// text: only what precedes the first call is the turn's).
type reasoner struct{}

func (reasoner) Complete(_ context.Context, req *runtime.CompletionRequest, w runtime.TurnWriter) error {
	w.Reasoning("thinking")
	if last := req.History[len(req.History)-1]; last.Kind == runtime.ItemUser && last.Text == "call" {
		w.ToolCall("", "echo", "{}")
		w.Reasoning(" after the call")
		return nil
	}
	w.Text("ok")
	return nil
}

// A completion's reasoning is kept on its assistant item, up to its tool
// call (turn.go's turnBuffer).
func TestCompletionKeepsItsReasoning(t *testing.T) {
	t.Parallel()
	store := local.NewHistoryStore()
	e, _ := newEngine(store, reasoner{})
	ctx := context.Background()
	u := userMsg("t", "u1")
	u.Text = "call"
	if _, err := e.RunSlice(ctx, runtime.SliceInput{ThreadID: "t", Messages: []runtime.Message{u}}); err != nil {
		t.Fatal(err)
	}
	th, err := store.Load(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, it := range th.Items {
		if it.Kind == runtime.ItemAssistant {
			got = append(got, it.Reasoning)
		}
	}
	// The first completion: reasoning, then the call; the second, after
	// echo's result: reasoning and text.
	if len(got) != 2 || got[0] != "thinking" || got[1] != "thinking" {
		t.Fatalf("assistant items' reasoning %q, want \"thinking\" on both (none of what followed the call)", got)
	}
}
