package local

import (
	"context"
	"slices"
	"testing"

	"github.com/agentslice/agentslice/internal/runtime"
)

// TestRefusedFirstCommitLeavesNoThread: a new thread's first commit that
// fails its length check is refused, and the store lists no thread for it
// (it once kept an empty record, which serve then listed as a thread).
func TestRefusedFirstCommitLeavesNoThread(t *testing.T) {
	s := NewHistoryStore()
	ctx := context.Background()
	bad := &runtime.Commit{ThreadID: "t-refused", Expected: 0,
		Append: []runtime.Item{{Kind: runtime.ItemUser, Text: "hi"}},
		State:  runtime.ThreadState{Version: 1, Length: 2, Stack: []string{"t-refused"}}}
	if err := s.Commit(ctx, bad); err == nil {
		t.Fatal("a first commit whose state length disagrees with its items was accepted")
	}
	if slices.Contains(s.Threads(), "t-refused") {
		t.Fatalf("the refused first commit left a thread behind: %v", s.Threads())
	}
	good := *bad
	good.State.Length = 1
	if err := s.Commit(ctx, &good); err != nil {
		t.Fatalf("the corrected first commit: %v", err)
	}
	if !slices.Contains(s.Threads(), "t-refused") {
		t.Fatalf("the committed thread is not listed: %v", s.Threads())
	}
}
