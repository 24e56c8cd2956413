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
	if got := pendingIDs(t, d); strings.Join(got, " ") != "t0/m1 t1/m2" {
		t.Fatalf("inbox after the refused checkpoint and a kill: %v, want t0/m1 t1/m2", got)
	}
}

// Checkpoints of every size around an encoding chunk's (encodeChunk) copy
// every thread: a checkpoint of 1, 15, 16, 17 and 47 new threads, each
// reading back after a reopen.
func TestCheckpointsOfChunkBoundarySizes(t *testing.T) {
	dir := t.TempDir()
	d := openUnmanaged(t, dir)
	h := d.History()
	var ids []string
	for _, n := range []int{1, encodeChunk - 1, encodeChunk, encodeChunk + 1, 3*encodeChunk - 1} {
		for range n {
			id := fmt.Sprintf("t%03d", len(ids))
			ids = append(ids, id)
			commitN(t, h, id, 0, id)
		}
		ctx, cancel := context.WithTimeout(context.Background(), checkpointBound)
		err := d.Checkpoint(ctx)
		cancel()
		if err != nil {
			t.Fatalf("a checkpoint of %d threads: %v", n, err)
		}
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	h = open(t, dir).History()
	for _, id := range ids {
		if got := texts(t, h, id); got != id {
			t.Fatalf("after the checkpoints and a reopen %s reads %q, want %q", id, got, id)
		}
	}
}

// A thread frozen after checkpoints wrote its items as rows keeps its
// history as one frame only (FreezeIdle): no item row of it is left, and it
// reads back whole, also after a commit that follows the freeze.
func TestFreezeLeavesNoItemRows(t *testing.T) {
	ctx := context.Background()
	d := open(t, t.TempDir())
	h := d.History()
	rows := func() int {
		t.Helper()
		var n int
		if err := d.rdb.QueryRowContext(ctx, `SELECT count(*) FROM items WHERE thread = 'a'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	commitN(t, h, "a", 0, "a1")
	if err := d.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	commitN(t, h, "a", 1, "a2")
	if err := d.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	if rows() == 0 {
		t.Fatal("the checkpoints of a thread in memory wrote no item rows: nothing for the freeze to merge")
	}
	if n := h.FreezeIdle(-1); n != 1 {
		t.Fatalf("FreezeIdle dropped %d threads, want 1", n)
	}
	if n := rows(); n != 0 {
		t.Fatalf("after the freeze %d item rows of the thread are left, want 0 (the frame holds them)", n)
	}
	commitN(t, h, "a", 2, "a3")
	if err := d.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	if got := texts(t, h, "a"); got != "a1,a2,a3" {
		t.Fatalf("the frozen thread reads %q, want a1,a2,a3", got)
	}
}
