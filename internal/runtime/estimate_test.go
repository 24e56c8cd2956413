package runtime

import (
	"strings"
	"testing"
)

// The completion estimate counts every byte that came since the latest
// completion, a tool call's arguments included (a third of a token per
// byte), plus a whole completion of output.
func TestEstimateCountsToolCallArguments(t *testing.T) {
	t.Parallel()
	args := strings.Repeat("x", 300)
	s := &slice{e: &Engine{}, view: []Item{
		{Kind: ItemUser, Text: "abc"},
		{Kind: ItemToolCall, Name: "run_command", CallID: "c1", Args: args},
	}}
	s.st.Tokens = 0 // no completion yet: the whole view counts
	got := s.estimate()
	in := (3+300)/3 + 1
	if want := int64(in + 4096); got.Tokens != want {
		t.Fatalf("estimate = %d tokens, want %d (%d input + 4096 output)", got.Tokens, want, in)
	}
	// After a completion, only the items since the mark count, on top of
	// the completion's tokens.
	s.st.Tokens, s.mark = 1000, 1
	got = s.estimate()
	in = 1000 + 300/3 + 1
	if want := int64(in + 4096); got.Tokens != want {
		t.Fatalf("estimate after a completion = %d tokens, want %d", got.Tokens, want)
	}
}
