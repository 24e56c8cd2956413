package disk

// This file's name sorts before every other test file's on purpose: go test
// runs a package's tests in file order, and with -failfast (as the mutation
// oracle runs them) the first test that checkpoints (a Close does) decides
// whether a checkpoint that never returns fails by an assertion or hangs the
// binary.

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/agentslice/agentslice/internal/runtime"
)

// checkpointBound is how long a test waits for a checkpoint of a few dozen
// threads before it fails: a liveness bound, not a speed assertion (such a
// checkpoint takes milliseconds; the bound leaves room for a loaded machine).
const checkpointBound = 20 * time.Second

// A checkpoint returns within a deadline, of nothing (a fresh store) and of
// more entries than one encoding chunk (encodeChunk), so does a commit, and
// what the checkpoint copied reads back after a reopen. The DB is not
// closed on failure: Close checkpoints too, and would wait for ever for the
// same stuck journal or encoding.
func TestCheckpointReturnsWithinADeadline(t *testing.T) {
	dir := t.TempDir()
	d := openUnmanaged(t, dir)
	checkpoint := func(what string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), checkpointBound)
		defer cancel()
		if err := d.Checkpoint(ctx); err != nil {
			t.Fatalf("a checkpoint of %s did not finish within %v: %v", what, checkpointBound, err)
		}
	}
	checkpoint("a fresh store")
	h := d.History()
	// The first commit has the same bound: a journal that never answers
	// fails here, not in the commits after it.
	ctx, cancel := context.WithTimeout(context.Background(), checkpointBound)
	defer cancel()
	if err := h.Commit(ctx, &runtime.Commit{ThreadID: "t00", Expected: 0,
		Append: []runtime.Item{{Kind: runtime.ItemUser, Input: "t00-one", Text: "one"}, {Kind: runtime.ItemUser, Input: "t00-two", Text: "two"}},
		State:  runtime.ThreadState{Version: 1, Length: 2, Stack: []string{"t00"}}}); err != nil {
		t.Fatalf("a commit to a fresh store did not finish within %v: %v", checkpointBound, err)
	}
	const threads = 3*encodeChunk + 5
	for i := 1; i < threads; i++ {
		commitN(t, h, fmt.Sprintf("t%02d", i), 0, "one", "two")
	}
	checkpoint(fmt.Sprintf("%d threads", threads))
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	h = open(t, dir).History()
	for i := range threads {
		id := fmt.Sprintf("t%02d", i)
		if got := texts(t, h, id); got != "one,two" {
			t.Fatalf("after the checkpoint and a reopen %s reads %q, want \"one,two\"", id, got)
		}
	}
}

// A second commit to a thread in memory returns within a deadline: reserve
// looks again whenever the thread came into or left memory while it was
// read, and a commit whose context ends stops looking with ctx.Err(). This
// test comes second in the package for the same reason as the one above: a
// reserve that never finds the thread it holds fails here by assertion.
func TestSecondCommitReturnsWithinADeadline(t *testing.T) {
	d := openUnmanaged(t, t.TempDir())
	h := d.History()
	commitN(t, h, "t", 0, "one")
	ctx, cancel := context.WithTimeout(context.Background(), checkpointBound)
	defer cancel()
	if err := h.Commit(ctx, &runtime.Commit{ThreadID: "t", Expected: 1,
		Append: []runtime.Item{{Kind: runtime.ItemUser, Input: "t-two", Text: "two"}},
		State:  runtime.ThreadState{Version: 2, Length: 2, Stack: []string{"t"}}}); err != nil {
		t.Fatalf("a second commit to a thread in memory did not finish within %v: %v", checkpointBound, err)
	}
	if got := texts(t, h, "t"); got != "one,two" {
		t.Fatalf("after two commits the thread reads %q, want \"one,two\"", got)
	}
	// A commit whose context has ended is refused with the context's error
	// and leaves the thread as it was.
	ended, stop := context.WithCancel(context.Background())
	stop()
	err := h.Commit(ended, &runtime.Commit{ThreadID: "t", Expected: 2,
		Append: []runtime.Item{{Kind: runtime.ItemUser, Input: "t-three", Text: "three"}},
		State:  runtime.ThreadState{Version: 3, Length: 3, Stack: []string{"t"}}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("a commit with an ended context returned %v, want context.Canceled", err)
	}
	if got := texts(t, h, "t"); got != "one,two" {
		t.Fatalf("after a refused commit the thread reads %q, want \"one,two\"", got)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
}
