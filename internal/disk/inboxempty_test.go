package disk

import (
	"context"
	"testing"

	"github.com/agentslice/agentslice/internal/runtime"
)

// Put and Done accept an empty batch and journal it as a record of no
// entries; after a kill the replay reads such records like any other (an
// empty record is not damage) and keeps the messages around them.
func TestEmptyInboxRecordsReplay(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	d := openUnmanaged(t, dir)
	in := d.Inbox()
	if err := in.Put(ctx, nil); err != nil {
		t.Fatalf("Put of no messages: %v", err)
	}
	if err := in.Done("a", nil); err != nil {
		t.Fatalf("Done of no messages: %v", err)
	}
	if err := in.Put(ctx, []runtime.Message{msg("a", "m1")}); err != nil {
		t.Fatal(err)
	}
	if err := in.Put(ctx, nil); err != nil { // the last record of the journal
		t.Fatalf("Put of no messages: %v", err)
	}
	kill(t, d)
	d, err := Open(ctx, dir, Options{})
	if err != nil {
		t.Fatalf("reopening a journal with empty inbox records: %v", err)
	}
	defer d.Close()
	got, err := d.Inbox().Pending(ctx)
	if err != nil || len(got) != 1 || got[0].ID != "m1" {
		t.Fatalf("pending after the replay: %+v, %v; want m1", got, err)
	}
}
