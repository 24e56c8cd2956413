package runtime_test

import (
	"reflect"
	"testing"

	"github.com/agentslice/agentslice/internal/runtime"
)

// TestDigestAdvanceAgreesWithDigestOf: a digest advanced commit by commit
// (what replay does) equals the digest of the whole thread (what a
// checkpoint writes), wherever the commits split the items: the title
// from the first user message, a choice offered then answered, a new
// pending call whose choice comes in a later commit.
func TestDigestAdvanceAgreesWithDigestOf(t *testing.T) {
	choice := `{"type":"user_choice","prompt":"Which?","choices":["a"]}`
	items := []runtime.Item{
		{Kind: runtime.ItemAssistant, At: 5, Text: "hello"},
		{Kind: runtime.ItemUser, At: 10, Text: "  the\n first "},
		{Kind: runtime.ItemToolCall, At: 11, CallID: "c1", Name: "ask"},
		{Kind: runtime.ItemMarker, At: 12, CallID: "c1", Name: runtime.ChoiceMarkerName, Args: choice},
		{Kind: runtime.ItemUser, At: 13, Text: "the second"},
		{Kind: runtime.ItemMarker, At: 14, CallID: "c1", Name: runtime.AnswerMarkerName},
		{Kind: runtime.ItemToolCall, At: 15, CallID: "c2", Name: "ask"},
		{Kind: runtime.ItemMarker, At: 16, CallID: "c2", Name: runtime.ChoiceMarkerName, Args: choice},
		{Kind: runtime.ItemAssistant, At: 9, Text: "late stamp"},
	}
	// The state after each item: the pending call it leaves.
	stateAt := func(n int) runtime.ThreadState {
		st := runtime.ThreadState{Version: int64(n), Length: n, Agent: "w", Tokens: n * 10}
		switch {
		case n >= 7:
			st.Pending = &runtime.PendingCall{ID: "c2", Name: "ask"}
		case n >= 3 && n < 6:
			st.Pending = &runtime.PendingCall{ID: "c1", Name: "ask"}
		}
		return st
	}
	for mask := 0; mask < 1<<(len(items)-1); mask++ { // every way to split the items into commits
		var d runtime.Digest
		from := 0
		for i := 1; i <= len(items); i++ {
			if i < len(items) && mask&(1<<(i-1)) == 0 {
				continue
			}
			st := stateAt(i)
			d = d.Advance(&st, items[from:i])
			st2 := stateAt(i)
			if want := runtime.DigestOf(&st2, items[:i]); !reflect.DeepEqual(d, want) {
				t.Fatalf("split %b, after %d items: advanced %+v, whole %+v", mask, i, d, want)
			}
			from = i
		}
	}
	st := stateAt(len(items))
	d := runtime.DigestOf(&st, items)
	if d.Title != "the first" || d.LastActivity != 16 || d.Choice != choice || d.DurableStatus() != runtime.StatusChoice {
		t.Fatalf("digest %+v (status %s)", d, d.DurableStatus())
	}
}

// StateDigest's Versioned says the thread has committed: a state at
// version 0 (a thread not created yet) is not, for which serve shows no
// default agent.
func TestStateDigestVersioned(t *testing.T) {
	t.Parallel()
	if d := runtime.StateDigest(&runtime.ThreadState{}); d.Versioned {
		t.Errorf("a state at version 0: Versioned")
	}
	if d := runtime.StateDigest(&runtime.ThreadState{Version: 1}); !d.Versioned {
		t.Errorf("a state at version 1: not Versioned")
	}
}
