package disk

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/agentslice/agentslice/internal/runtime"
)

// A checkpoint whose transaction SQLite refuses (here a trigger aborts the
// first thread row) returns the database's error and loses nothing: the
// journal segments it did not copy stay, and after a kill the replay
// brings back every commit and every pending message.
func TestRefusedCheckpointKeepsTheJournal(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	d := openUnmanaged(t, dir)
	h := d.History()
	for i := range 3 {
		commitN(t, h, fmt.Sprintf("t%d", i), 0, "one", "two")
	}
	if err := d.Inbox().Put(ctx, []runtime.Message{msg("t0", "m1"), msg("t1", "m2")}); err != nil {
		t.Fatal(err)
	}
	// walDB is a second write connection to the same file; the writer's
	// statements see the trigger at their next step.
	if _, err := d.walDB.ExecContext(ctx, `CREATE TRIGGER refuse BEFORE INSERT ON threads
		BEGIN SELECT RAISE(ABORT, 'refused by the test'); END`); err != nil {
		t.Fatal(err)
	}
	err := d.Checkpoint(ctx)
	if err == nil || !strings.Contains(err.Error(), "refused by the test") {
		t.Fatalf("a checkpoint the database refuses returned %v, want the trigger's error", err)
	}
	if _, err := d.walDB.ExecContext(ctx, `DROP TRIGGER refuse`); err != nil {
		t.Fatal(err)
	}
	kill(t, d)

	d = open(t, dir)
	for i := range 3 {
		id := fmt.Sprintf("t%d", i)
		if got := texts(t, d.History(), id); got != "one,two" {
			t.Fatalf("after the refused checkpoint and a kill %s reads %q, want \"one,two\"", id, got)
		}
	}
	pending, err := d.Inbox().Pending(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range pending {
		got = append(got, m.ThreadID+"/"+m.ID)
	}
	if strings.Join(got, " ") != "t0/m1 t1/m2" {
		t.Fatalf("inbox after the refused checkpoint and a kill: %v, want t0/m1 t1/m2", got)
	}
}
