package runtime_test

import (
	"context"
	"strings"
	"testing"

	"github.com/agentslice/agentslice/internal/local"
	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/internal/runtime/runtimetest"
)

// Limits.MaxSubscriptions bounds the subscriptions a thread keeps: with a
// limit of 1 the first is kept, and a second is refused (an error result,
// and the tool is asked to stop it) (fold.go's foldResult).
func TestMaxSubscriptionsKeepsUpToTheLimit(t *testing.T) {
	t.Parallel()
	store := local.NewHistoryStore()
	e, _ := newEngine(store, &sysModel{name: "m"})
	e.Limits.MaxSubscriptions = 1
	watch := &runtimetest.RecordingTool{}
	e.Tools.(*runtime.Toolbox).MustAdd(runtime.ToolEntry{Spec: runtime.ToolSpec{Name: "watch"}, Async: watch})
	ctx := context.Background()
	run := func(m runtime.Message) {
		t.Helper()
		if _, err := e.RunSlice(ctx, runtime.SliceInput{ThreadID: "t", Messages: []runtime.Message{m}}); err != nil {
			t.Fatal(err)
		}
	}
	subscribe := func(n int) *runtime.Thread {
		t.Helper()
		u := userMsg("t", "u"+string(rune('0'+n)))
		u.Text = "call watch {}"
		run(u)
		calls := watch.Calls()
		if len(calls) != n {
			t.Fatalf("watch dispatched %d times, want %d", len(calls), n)
		}
		c := calls[n-1].CallID
		run(runtime.Message{V: 1, ID: "sub-" + c, ThreadID: "t", Kind: runtime.KindToolResult, ToolCallID: c, Text: "watching", Subscription: true})
		th, err := store.Load(ctx, "t")
		if err != nil {
			t.Fatal(err)
		}
		return th
	}
	th := subscribe(1)
	if res := lastResult(th.Items); len(th.State.Subscriptions) != 1 || res == nil || res.IsError {
		t.Fatalf("first subscription under a limit of 1: %d kept, result %+v; want it kept", len(th.State.Subscriptions), res)
	}
	th = subscribe(2)
	if res := lastResult(th.Items); len(th.State.Subscriptions) != 1 || res == nil || !res.IsError || !strings.Contains(res.Text, "its limit") {
		t.Fatalf("second subscription at a limit of 1: %d kept, result %+v; want it refused", len(th.State.Subscriptions), res)
	}
}

// lastResult is the last tool result in items, or nil.
func lastResult(items []runtime.Item) *runtime.Item {
	for i := len(items) - 1; i >= 0; i-- {
		if items[i].Kind == runtime.ItemToolResult {
			return &items[i]
		}
	}
	return nil
}
