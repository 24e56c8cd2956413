package runtime_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentslice/agentslice/internal/runtime"
)

// TestForkCut: a fork may cut a history anywhere but between a call and
// its result, and the refusal says where it could cut instead.
func TestForkCut(t *testing.T) {
	t.Parallel()
	items := []runtime.Item{
		{Kind: runtime.ItemUser, Text: "hi"},
		{Kind: runtime.ItemToolCall, CallID: "c1", Name: "get_time"},
		{Kind: runtime.ItemMarker, Text: "display"},
		{Kind: runtime.ItemToolResult, CallID: "c1", Name: "get_time"},
		{Kind: runtime.ItemAssistant, Text: "noon"},
		{Kind: runtime.ItemToolCall, CallID: "c2", Name: "sleep"}, // pending: no result yet
	}
	for _, tc := range []struct {
		at   int
		want string // "" when the cut is fine
	}{
		{0, ""}, {1, ""}, {4, ""}, {5, ""},
		{2, "fork at 1 or at 4 or later"},
		{3, "fork at 1 or at 4 or later"},
		{6, "has no result yet: fork at 5"},
		{7, "outside the thread's history of 6 items"},
		{-1, "outside"},
	} {
		err := runtime.ForkCut(items, tc.at)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("at %d: %v", tc.at, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("at %d: %v, want an error saying %q", tc.at, err, tc.want)
		}
	}
	src := &runtime.Thread{ID: "src", Items: items, State: runtime.ThreadState{Version: 9, Agent: "a", AgentHash: "h", Upgrade: runtime.UpgradePinned,
		Pending: &runtime.PendingCall{ID: "c2"}, Children: []string{"kid"}, Subscriptions: []runtime.Subscription{{CallID: "s"}}, Model: "m"}}
	c, err := runtime.NewFork(src, "f", 5, runtime.FixedEntropy)
	if err != nil {
		t.Fatal(err)
	}
	st := c.State
	if st.Version != 1 || st.Pending != nil || st.Children != nil || st.Subscriptions != nil || st.Fork == nil || *st.Fork != (runtime.ForkPoint{Thread: "src", At: 5}) ||
		st.Agent != "a" || st.AgentHash != "h" || st.Upgrade != runtime.UpgradePinned || st.Model != "m" || st.Incarnation == "" || len(st.Stack) != 1 {
		t.Fatalf("fork state %+v", st)
	}
	if _, err := runtime.NewFork(src, "f", 6, nil); err == nil {
		t.Fatal("a fork after a pending call was made")
	}
}

// A fork's view starts where a child's would: at what the latest summary
// before the fork point covers, so a fork after a compaction loads from
// the summary; a fork before it, or of a thread never compacted, whole.
func TestForkViewStart(t *testing.T) {
	src := &runtime.Thread{ID: "src", State: runtime.ThreadState{Stack: []string{"src"}}}
	for i := range 10 {
		src.Items = append(src.Items, runtime.Item{Kind: runtime.ItemUser, Input: fmt.Sprint("u", i), Text: "turn"}, runtime.Item{Kind: runtime.ItemAssistant, Text: "ok"})
	}
	// The summary at 20 covers the view up to 16.
	src.Items = append(src.Items, runtime.Item{Kind: runtime.ItemSummary, Input: "sum", Text: "SUMMARY", Args: `{"covers":16}`},
		runtime.Item{Kind: runtime.ItemUser, Input: "u-after", Text: "more"}, runtime.Item{Kind: runtime.ItemAssistant, Text: "ok"})
	for _, tc := range []struct{ at, want int }{{4, 0}, {20, 0}, {21, 16}, {23, 16}} {
		c, err := runtime.NewFork(src, "fk", tc.at, runtime.FixedEntropy)
		if err != nil {
			t.Fatal(err)
		}
		if c.State.ViewStart != tc.want {
			t.Errorf("fork at %d: view start %d, want %d", tc.at, c.State.ViewStart, tc.want)
		}
	}
}

// A fork's Reach counts its source, and its source's reach too when the
// fork's view starts in the source's inherited part (it then reaches the
// source's ancestors); a fork whose view starts past them, after one of
// the source's own summaries, reaches the source only.
func TestForkReach(t *testing.T) {
	src := &runtime.Thread{ID: "child", Inherited: 4, State: runtime.ThreadState{Stack: []string{"root", "child"}, Parent: "root", Reach: 2}}
	for i := range 4 { // inherited: 0-3
		src.Items = append(src.Items, runtime.Item{Kind: runtime.ItemUser, Input: fmt.Sprint("p", i), Text: "parent"})
	}
	for i := range 4 { // own: 4-7
		src.Items = append(src.Items, runtime.Item{Kind: runtime.ItemUser, Input: fmt.Sprint("u", i), Text: "turn"})
	}
	// The own summary at 8 covers the view up to 6.
	src.Items = append(src.Items, runtime.Item{Kind: runtime.ItemSummary, Input: "sum", Text: "SUMMARY", Args: `{"covers":6}`},
		runtime.Item{Kind: runtime.ItemAssistant, Text: "ok"})
	for _, tc := range []struct{ at, viewStart, reach int }{{5, 0, 3}, {10, 6, 1}} {
		c, err := runtime.NewFork(src, "fk", tc.at, runtime.FixedEntropy)
		if err != nil {
			t.Fatal(err)
		}
		if c.State.ViewStart != tc.viewStart || c.State.Reach != tc.reach {
			t.Errorf("fork at %d: view start %d, reach %d; want %d and %d", tc.at, c.State.ViewStart, c.State.Reach, tc.viewStart, tc.reach)
		}
	}
}
