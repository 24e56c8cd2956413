package runtime_test

import (
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
