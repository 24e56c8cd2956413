package runtime

import "testing"

// A compaction started while a call is pending covers the view up to that
// call, wherever it lies: here items came after it (a user message, the
// call's own running notice), so the search for it walks back past them.
func TestCompactionCoversUpToAPendingCallNotLast(t *testing.T) {
	t.Parallel()
	s := &slice{e: &Engine{Compaction: &CompactionPolicy{ContextWindow: 1000}}, th: &Thread{Base: 10}, threadID: "t1",
		view: []Item{
			{Kind: ItemUser, Input: "u0", Text: "start"},
			{Kind: ItemToolCall, CallID: "c1", Name: "run_command", Args: "{}"},
			{Kind: ItemUser, Input: "u1", Text: "and meanwhile"},
			{Kind: ItemUser, Input: "u2", Text: "still waiting"},
		}}
	s.st.Version, s.st.Tokens, s.st.Stack = 3, 900, []string{"t1"}
	s.st.Pending = &PendingCall{ID: "c1", Name: "run_command"}
	s.maybeCompact()
	if len(s.children) != 1 {
		t.Fatalf("%d compaction children, want 1", len(s.children))
	}
	if got, want := s.children[0].SpawnAt, 10+1; got != want || s.children[0].State.Covers != want {
		t.Fatalf("the compaction covers %d (spawn at %d), want %d: up to the pending call", s.children[0].State.Covers, got, want)
	}
}
