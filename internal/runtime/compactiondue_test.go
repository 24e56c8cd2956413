package runtime_test

import (
	"context"
	"testing"

	"github.com/agentslice/agentslice/internal/local"
	"github.com/agentslice/agentslice/internal/runtime"
)

// A thread compacts when its last completion's tokens reach the threshold's
// fraction of the window, not before (compactionDue); a compaction policy
// without a context window compacts nothing: with a window of 0 every token
// count would be past its threshold, and each completion would start a
// compaction.
func TestCompactionStartsAtTheThreshold(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		window  int
		compact bool
	}{{0, false}, {10, true}, {15, true}, {16, false}, {1000, false}} { // sysModel reports 12 tokens: 0.8 × 15 = 12
		store := local.NewHistoryStore()
		e, _ := newEngine(store, &sysModel{name: "m"})
		e.Compaction = &runtime.CompactionPolicy{ContextWindow: tc.window, Threshold: 0.8}
		ctx := context.Background()
		if _, err := e.RunSlice(ctx, runtime.SliceInput{ThreadID: "t", Messages: []runtime.Message{userMsg("t", "u1")}}); err != nil {
			t.Fatal(err)
		}
		th, err := store.Load(ctx, "t")
		if err != nil {
			t.Fatal(err)
		}
		if got := th.State.Compacting != ""; got != tc.compact {
			t.Errorf("window %d, 12 tokens used: compaction started %v (child %q), want %v", tc.window, got, th.State.Compacting, tc.compact)
		}
	}
}
