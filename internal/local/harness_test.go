package local

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/internal/runtime/runtimetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type harness struct {
	t     *testing.T
	sys   *System
	store *HistoryStore
	run   *runtimetest.RecordingTool // async, answers at once
	work  *runtimetest.RecordingTool // async, never answers by itself
	echo  int                        // sync tool calls

	tb  *runtime.Toolbox
	mu  sync.Mutex
	out []runtime.OutputEvent
	got chan struct{} // a signal per output event
}

// harnessClock is the fixed clock of the harness's engine.
func harnessClock() time.Time { return time.Date(2026, 3, 28, 12, 0, 0, 0, time.UTC) }

func newHarness(t *testing.T, model runtime.Model, mods ...func(*Config)) *harness {
	t.Helper()
	h := &harness{t: t, store: NewHistoryStore(), got: make(chan struct{}, 1024)}
	h.run = &runtimetest.RecordingTool{Reply: func(inv runtime.Invocation) (string, bool) {
		return "ok: " + inv.Args, true
	}}
	h.work = &runtimetest.RecordingTool{}
	tb := runtime.NewToolbox()
	tb.MustAdd(runtime.ToolEntry{Spec: runtime.ToolSpec{Name: "run_command"}, Async: h.run})
	tb.MustAdd(runtime.ToolEntry{Spec: runtime.ToolSpec{Name: "work"}, Async: h.work})
	tb.MustAdd(runtime.ToolEntry{Spec: runtime.ToolSpec{Name: "echo"}, Sync: runtimetest.SyncFunc(
		func(ctx context.Context, env *runtime.SyncEnv, inv runtime.Invocation) (runtime.ToolOutput, error) {
			h.mu.Lock()
			h.echo++
			h.mu.Unlock()
			return runtime.ToolOutput{Text: "echo " + inv.Args}, nil
		})})
	cfg := Config{Model: model, Tools: tb, History: h.store,
		Output: OutputFunc(func(ctx context.Context, ev runtime.OutputEvent) error {
			h.mu.Lock()
			h.out = append(h.out, ev)
			h.mu.Unlock()
			select {
			case h.got <- struct{}{}:
			default: // a waiter has signals queued already
			}
			return nil
		}),
		Logger:    slog.New(slog.DiscardHandler),
		Limits:    runtime.Limits{RetryBase: time.Millisecond},
		RetryBase: time.Millisecond,
		Now:       harnessClock, // items carry its time: transcripts compare equal
	}
	for _, m := range mods {
		m(&cfg)
	}
	h.tb = tb
	sys, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.sys = sys
	sys.Engine().Entropy = runtime.FixedEntropy // identical runs issue identical IDs (golden files)
	h.run.Queue, h.work.Queue = sys, sys
	if err := sys.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopBounded(t, sys) })
	return h
}

// stopBounded stops the system, and fails the test if Stop has not returned
// after a generous wait: a shard lock left held (a mutant of Kick) then
// fails with an assertion instead of hanging the test binary until its
// -timeout. The stuck Stop is left behind (goleak reports it too).
func stopBounded(t *testing.T, sys *System) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		sys.Stop()
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Errorf("Stop did not return: a lock is held or a goroutine does not end")
	}
}

func user(thread, id, text string) runtime.Message {
	return runtime.Message{V: 1, ID: id, ThreadID: thread, Kind: runtime.KindUser, Text: text}
}

func result(thread, id, call, text string) runtime.Message {
	return runtime.Message{V: 1, ID: id, ThreadID: thread, Kind: runtime.KindToolResult, ToolCallID: call, Text: text}
}

func (h *harness) send(msgs ...runtime.Message) {
	h.t.Helper()
	if err := h.sys.Send(context.Background(), msgs...); err != nil {
		h.t.Fatalf("send: %v", err)
	}
}

// wait blocks until no thread has work (bounded, so a stuck system fails).
func (h *harness) wait() {
	h.t.Helper()
	select {
	case <-h.sys.Idle():
	case <-time.After(10 * time.Second):
		h.t.Fatalf("system did not go idle; %d threads active", h.sys.Active())
	}
}

// waitReplies blocks until n reply events have been published in all.
func (h *harness) waitReplies(n int) {
	h.t.Helper()
	deadline := time.After(10 * time.Second)
	for len(h.outputs("reply")) < n {
		select {
		case <-h.got:
		case <-deadline:
			h.t.Fatalf("%d replies, waited for %d", len(h.outputs("reply")), n)
		}
	}
}

func (h *harness) history(thread string) []runtime.Item {
	h.t.Helper()
	th, err := h.store.Load(context.Background(), thread)
	if err != nil {
		h.t.Fatal(err)
	}
	if err := runtimetest.CheckOneResultPerCall(th.Items); err != nil {
		h.t.Fatalf("thread %s breaks one-result-per-call: %v\n%s", thread, err, runtimetest.Transcript(th.Items))
	}
	return th.Items
}

func (h *harness) outputs(kind string) []runtime.OutputEvent {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []runtime.OutputEvent
	for _, ev := range h.out {
		if kind == "" || ev.Kind == kind {
			out = append(out, ev)
		}
	}
	return out
}

func kinds(items []runtime.Item) string {
	s := ""
	for i, it := range items {
		if i > 0 {
			s += ","
		}
		s += it.Kind.String()
	}
	return s
}

func mustEqualTranscripts(t *testing.T, what string, got, want []runtime.Item) {
	t.Helper()
	g, w := runtimetest.Transcript(got), runtimetest.Transcript(want)
	if g != w {
		t.Fatalf("%s: transcripts differ\n--- got\n%s\n--- want\n%s", what, g, w)
	}
}

var _ = fmt.Sprintf
