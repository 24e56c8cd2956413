package runtime_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"

	"github.com/agentslice/agentslice/internal/local"
	"github.com/agentslice/agentslice/internal/model"
	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/internal/runtime/runtimetest"
)

// newIncarnationEngine is an engine whose model calls the asynchronous
// tool "work" once, with real randomness for incarnations.
func newIncarnationEngine(store runtime.HistoryStore) (*runtime.Engine, *runtimetest.RecordingTool) {
	e, _ := newEngine(store, &model.Sim{Chunks: 1, Tool: "work", ToolArgs: `{}`})
	tool := &runtimetest.RecordingTool{}
	e.Tools.(*runtime.Toolbox).MustAdd(runtime.ToolEntry{Spec: runtime.ToolSpec{Name: "work"}, Async: tool})
	return e, tool
}

// firstCall runs thread demo's first slice (retried until it succeeds)
// and returns its call ID and the thread.
func firstCall(t *testing.T, e *runtime.Engine, store runtime.HistoryStore) (string, *runtime.Thread) {
	t.Helper()
	in := runtime.SliceInput{ThreadID: "demo", Messages: []runtime.Message{userMsg("demo", "m1")}}
	for range 5 {
		_, err := e.RunSlice(context.Background(), in)
		if err == nil {
			break
		}
		if !errors.Is(err, runtime.ErrCrashed) {
			t.Fatal(err)
		}
	}
	th, err := store.Load(context.Background(), "demo")
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(th.Items, func(it runtime.Item) bool { return it.Kind == runtime.ItemToolCall })
	if i < 0 || th.State.Pending == nil {
		t.Fatalf("no pending call: %s", runtimetest.Transcript(th.Items))
	}
	return th.Items[i].CallID, th
}

// TestRecreatedThreadIssuesOtherCallIDs: two conversations on thread demo,
// each in a fresh store and opened by the same message, issue different
// call IDs; with runtime.FixedEntropy (tests comparing runs) the same.
func TestRecreatedThreadIssuesOtherCallIDs(t *testing.T) {
	t.Parallel()
	ids := map[bool][]string{}
	for _, fixed := range []bool{false, true} {
		for range 2 {
			store := local.NewHistoryStore()
			e, _ := newIncarnationEngine(store)
			if fixed {
				e.Entropy = runtime.FixedEntropy
			}
			id, th := firstCall(t, e, store)
			if th.State.Incarnation == "" {
				t.Fatal("a new root thread has no incarnation")
			}
			ids[fixed] = append(ids[fixed], id)
		}
	}
	if ids[false][0] == ids[false][1] {
		t.Fatalf("two incarnations of thread demo issued call ID %s", ids[false][0])
	}
	if ids[true][0] != ids[true][1] {
		t.Fatalf("fixed entropy: call IDs %v differ", ids[true])
	}
}

// TestFirstSliceRetryLeaksNoIncarnation: whichever point the creating
// slice dies at, the incarnation it drew is either committed (and the
// retry keeps it) or never left the slice: every call the tool received
// carries the call ID history holds, and the callback is signed for the
// committed incarnation.
func TestFirstSliceRetryLeaksNoIncarnation(t *testing.T) {
	t.Parallel()
	for _, p := range runtime.CrashPoints {
		t.Run(string(p), func(t *testing.T) {
			t.Parallel()
			store := local.NewHistoryStore()
			e, tool := newIncarnationEngine(store)
			e.Faults = &crashOnce{point: p}
			id, th := firstCall(t, e, store)
			calls := tool.Calls()
			if len(calls) == 0 {
				// Dispatch happens after the commit; a crash before it is
				// followed by a retry that dispatches.
				t.Fatal("the call was never dispatched")
			}
			for _, c := range calls {
				if c.CallID != id || c.Incarnation != th.State.Incarnation {
					t.Fatalf("the tool got call %s of incarnation %s; history holds %s of %s", c.CallID, c.Incarnation, id, th.State.Incarnation)
				}
			}
		})
	}
}

// TestThreadWithoutIncarnationKeepsItsIDs: a thread stored before
// incarnations (no incarnation in its state) gets none and derives its
// call IDs as it always did.
func TestThreadWithoutIncarnationKeepsItsIDs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := local.NewHistoryStore()
	if err := store.Commit(ctx, &runtime.Commit{ThreadID: "demo", Expected: 0,
		Append: []runtime.Item{{Kind: runtime.ItemUser, Input: "old", Text: "hello"}, {Kind: runtime.ItemAssistant, Text: "hi"}},
		State:  runtime.ThreadState{Version: 1, Length: 2, Stack: []string{"demo"}}}); err != nil {
		t.Fatal(err)
	}
	e, _ := newIncarnationEngine(store)
	id, th := firstCall(t, e, store)
	if th.State.Incarnation != "" {
		t.Fatalf("an old thread was given incarnation %q", th.State.Incarnation)
	}
	pos := slices.IndexFunc(th.Items, func(it runtime.Item) bool { return it.Kind == runtime.ItemToolCall })
	if want := runtime.DeriveID("call_", "demo", strconv.Itoa(pos)); id != want {
		t.Fatalf("call ID %s, want the old derivation %s", id, want)
	}
}
