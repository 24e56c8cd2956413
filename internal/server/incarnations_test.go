package server

import (
	"context"
	"testing"

	"github.com/agentslice/agentslice/internal/local"
	"github.com/agentslice/agentslice/internal/runtime"
)

// countingLoads counts the loads of a history store.
type countingLoads struct {
	runtime.HistoryStore
	loads int
}

func (c *countingLoads) Load(ctx context.Context, id string) (*runtime.Thread, error) {
	c.loads++
	return c.HistoryStore.Load(ctx, id)
}

// TestIncarnationIsLoadedOnce: the callback receiver's incarnation check
// loads a thread once, not once per callback (a streaming tool posts one
// per chunk); a thread not created yet is asked again.
func TestIncarnationIsLoadedOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	mem := local.NewHistoryStore()
	store := &countingLoads{HistoryStore: mem}
	inc := &incarnations{store: store}
	if got, err := inc.Incarnation(ctx, "t1"); err != nil || got != "" {
		t.Fatalf("a thread not created yet: %q, %v", got, err)
	}
	st := runtime.ThreadState{Version: 1, Length: 1, Stack: []string{"t1"}, Incarnation: "inc-1"}
	if err := mem.Commit(ctx, &runtime.Commit{ThreadID: "t1", Expected: 0, State: st,
		Append: []runtime.Item{{Kind: runtime.ItemUser, Text: "hi", Input: "m1"}}}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if got, err := inc.Incarnation(ctx, "t1"); err != nil || got != "inc-1" {
			t.Fatalf("incarnation %q, %v; want inc-1", got, err)
		}
	}
	if store.loads != 2 {
		t.Fatalf("%d loads for one absent and three present answers, want 2 (absent is asked again, present once)", store.loads)
	}
}
