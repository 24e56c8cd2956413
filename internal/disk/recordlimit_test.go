package disk

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/agentslice/agentslice/internal/runtime"
)

// A commit or an inbox write whose journal record is over the limit a
// replay reads lengths against is refused whole, before anything is
// written: the thread and the inbox stay as they were, later commits go
// on, and the directory opens after a kill. Before, such a record was
// synced and acknowledged, and the next Open took it for damage. The
// journal's limit is lowered here (it is maxRecord, 1 GiB, otherwise).
func TestRecordOverTheLimitIsRefusedWhole(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	d, err := Open(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	d.j.maxPayload = 4096
	h := d.History()
	small := []runtime.Item{{Kind: runtime.ItemUser, Input: "m1", Text: "hello"}}
	if err := h.Commit(ctx, &runtime.Commit{ThreadID: "t", Append: small,
		State: runtime.ThreadState{Version: 1, Length: 1, Stack: []string{"t"}}}); err != nil {
		t.Fatal(err)
	}
	big := []runtime.Item{{Kind: runtime.ItemAssistant, Text: strings.Repeat("x", 10000)}}
	err = h.Commit(ctx, &runtime.Commit{ThreadID: "t", Expected: 1, Append: big,
		State: runtime.ThreadState{Version: 2, Length: 2, Stack: []string{"t"}}})
	if !errors.Is(err, ErrRecordTooLarge) {
		t.Fatalf("a commit over the record limit: %v, want ErrRecordTooLarge", err)
	}
	th, err := h.Load(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	if th.State.Version != 1 || len(th.Items) != 1 {
		t.Fatalf("after the refused commit: version %d, %d items (want 1, 1)", th.State.Version, len(th.Items))
	}
	// The thread is not left reserved: the next commit at version 1 goes in.
	if err := h.Commit(ctx, &runtime.Commit{ThreadID: "t", Expected: 1, Append: []runtime.Item{{Kind: runtime.ItemAssistant, Text: "ok"}},
		State: runtime.ThreadState{Version: 2, Length: 2, Stack: []string{"t"}}}); err != nil {
		t.Fatalf("the commit after a refused one: %v", err)
	}
	msg := runtime.Message{V: 1, ThreadID: "u", ID: "big", Kind: runtime.KindUser, Text: strings.Repeat("y", 10000)}
	if err := d.Inbox().Put(ctx, []runtime.Message{msg}); !errors.Is(err, ErrRecordTooLarge) {
		t.Fatalf("an inbox write over the record limit: %v, want ErrRecordTooLarge", err)
	}
	kill(t, d)
	d2, err := Open(ctx, dir, Options{})
	if err != nil {
		t.Fatalf("Open after the kill: %v", err)
	}
	defer d2.Close()
	th, err = d2.History().Load(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	if th.State.Version != 2 || len(th.Items) != 2 || th.Items[1].Text != "ok" {
		t.Fatalf("after the kill: version %d, %d items (want 2, 2, the second \"ok\")", th.State.Version, len(th.Items))
	}
	pending, err := d2.Inbox().Pending(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(pending) != 0 {
		t.Fatalf("after the kill the inbox holds %d messages, want none (the oversized one was refused)", len(pending))
	}
}
