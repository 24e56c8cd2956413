package runtime_test

import (
	"context"
	"testing"
	"time"

	"github.com/agentslice/agentslice/internal/local"
	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/internal/runtime/runtimetest"
)

// slowModel takes 1.5 s of the test's clock per completion: the first
// calls the synchronous tool, the second answers.
type slowModel struct{ clock *time.Time }

func (m slowModel) Complete(_ context.Context, req *runtime.CompletionRequest, w runtime.TurnWriter) error {
	*m.clock = m.clock.Add(1500 * time.Millisecond)
	if last := req.History[len(req.History)-1]; last.Kind == runtime.ItemUser {
		w.ToolCall("", "tick", "{}")
		return nil
	}
	w.Text("done")
	return nil
}

// TestItemsKeepDurations: a consumed message's item has its arrival and
// its queue delay, a completion's first item its duration, a synchronous
// tool's result its run time (Item.Took), on the engine's clock.
func TestItemsKeepDurations(t *testing.T) {
	t.Parallel()
	clock := time.Date(2026, 3, 28, 12, 0, 0, 0, time.UTC)
	tb := runtime.NewToolbox()
	tb.MustAdd(runtime.ToolEntry{Spec: runtime.ToolSpec{Name: "tick"}, Sync: runtimetest.SyncFunc(
		func(ctx context.Context, env *runtime.SyncEnv, inv runtime.Invocation) (runtime.ToolOutput, error) {
			clock = clock.Add(300 * time.Millisecond)
			return runtime.ToolOutput{Text: "tock"}, nil
		})})
	store := local.NewHistoryStore()
	e := &runtime.Engine{History: store, Queue: &sink{}, Model: slowModel{&clock}, Tools: tb,
		Limits: runtime.Limits{RetryBase: time.Millisecond}, Now: func() time.Time { return clock }}
	arrived := runtime.StampOf(clock.Add(-4 * time.Second))
	m := userMsg("d", "u1")
	m.At = arrived
	res, err := e.RunSlice(context.Background(), runtime.SliceInput{ThreadID: "d", Messages: []runtime.Message{m}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Generating != 3*time.Second || res.Queued != 4*time.Second {
		t.Fatalf("slice result: generating %v, queued %v; want 3s and 4s", res.Generating, res.Queued)
	}
	th, err := store.Load(context.Background(), "d")
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		kind runtime.ItemKind
		took uint32
		at   runtime.Stamp
	}{
		{runtime.ItemUser, 4000, arrived},
		{runtime.ItemToolCall, 1500, runtime.StampOf(clock)},
		{runtime.ItemToolResult, 300, runtime.StampOf(clock)},
		{runtime.ItemAssistant, 1500, runtime.StampOf(clock)},
	}
	if len(th.Items) != len(want) {
		t.Fatalf("history %+v, want %d items", th.Items, len(want))
	}
	for i, w := range want {
		if it := th.Items[i]; it.Kind != w.kind || it.Took != w.took || it.At != w.at {
			t.Errorf("item %d: %s took %d at %v, want %s took %d at %v", i, it.Kind, it.Took, it.At, w.kind, w.took, w.at)
		}
	}
}

func TestMillis(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		d    time.Duration
		want uint32
	}{{-time.Second, 0}, {999 * time.Microsecond, 0}, {1500 * time.Millisecond, 1500}, {60 * 24 * time.Hour, 1<<32 - 1}} {
		if got := runtime.Millis(c.d); got != c.want {
			t.Errorf("Millis(%v) = %d, want %d", c.d, got, c.want)
		}
	}
}

// A message stamped at the very millisecond the slice starts keeps that
// arrival, with no queueing (Took 0), though its slice commits later: only
// a stamp ahead of the engine's clock is left out and gets the commit's
// time instead (engine.go's stampQueued).
func TestMessageStampedAtTheSliceStartKeepsItsArrival(t *testing.T) {
	t.Parallel()
	clock := time.Date(2026, 3, 28, 12, 0, 0, 0, time.UTC)
	store := local.NewHistoryStore()
	e, _ := newEngine(store, slowModel{&clock}) // each completion takes 1.5 s
	e.Now = func() time.Time { return clock }
	m := userMsg("d", "u1")
	m.At = runtime.StampOf(clock)
	if _, err := e.RunSlice(context.Background(), runtime.SliceInput{ThreadID: "d", Messages: []runtime.Message{m}}); err != nil {
		t.Fatal(err)
	}
	th, err := store.Load(context.Background(), "d")
	if err != nil {
		t.Fatal(err)
	}
	if it := th.Items[0]; it.Kind != runtime.ItemUser || it.At != m.At || it.Took != 0 {
		t.Fatalf("first item %s at %v took %d, want the user message at its arrival %v, took 0", it.Kind, it.At, it.Took, m.At)
	}
}

// A slice that folds an asynchronous call's result reports the tool and
// its latency: from the call's commit to the result's arrival, both on the
// engine's clock (SliceResult.Tool, ToolLatency).
func TestResultReportsTheToolsLatency(t *testing.T) {
	t.Parallel()
	clock := time.Date(2026, 3, 28, 12, 0, 0, 0, time.UTC)
	e, _ := newEngine(local.NewHistoryStore(), &sysModel{name: "m"})
	e.Now = func() time.Time { return clock }
	watch := &runtimetest.RecordingTool{}
	e.Tools.(*runtime.Toolbox).MustAdd(runtime.ToolEntry{Spec: runtime.ToolSpec{Name: "watch"}, Async: watch})
	ctx := context.Background()
	u := userMsg("t", "u1")
	u.Text = "call watch {}"
	if _, err := e.RunSlice(ctx, runtime.SliceInput{ThreadID: "t", Messages: []runtime.Message{u}}); err != nil {
		t.Fatal(err)
	}
	calls := watch.Calls()
	if len(calls) != 1 {
		t.Fatalf("watch dispatched %d times, want 1", len(calls))
	}
	clock = clock.Add(2 * time.Second)
	res, err := e.RunSlice(ctx, runtime.SliceInput{ThreadID: "t", Messages: []runtime.Message{{V: 1, ID: "r1", ThreadID: "t",
		Kind: runtime.KindToolResult, ToolCallID: calls[0].CallID, Text: "done", At: runtime.StampOf(clock)}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Tool != "watch" || res.ToolLatency != 2*time.Second {
		t.Fatalf("slice result: tool %q latency %v, want watch and 2s", res.Tool, res.ToolLatency)
	}
}
