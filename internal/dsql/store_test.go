package dsql

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/agentslice/agentslice/internal/runtime"
	"github.com/agentslice/agentslice/internal/runtime/storetest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opts []poolOpt
	}{
		{"ReadCommitted", nil},
		// DSQL runs every transaction with snapshot isolation and fails the
		// later of two conflicting writers at commit; REPEATABLE READ is the
		// PostgreSQL behaviour closest to it.
		{"RepeatableRead", []poolOpt{repeatableRead}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			storetest.RunHistory(t, func(t *testing.T) runtime.HistoryStore {
				return New(newSchemaPool(t, tc.opts...), Options{})
			})
		})
	}
}

func item(kind runtime.ItemKind, text string) runtime.Item {
	return runtime.Item{Kind: kind, Text: text}
}

func mustCommit(t *testing.T, s *Store, c *runtime.Commit) {
	t.Helper()
	if err := s.Commit(context.Background(), c); err != nil {
		t.Fatalf("Commit(%s@%d): %v", c.ThreadID, c.Expected, err)
	}
}

func rootCommit(id string, expected int64, length int, add ...runtime.Item) *runtime.Commit {
	return &runtime.Commit{ThreadID: id, Expected: expected, Append: add,
		State: runtime.ThreadState{Version: expected + 1, Length: length + len(add), Stack: []string{id}}}
}

func TestConflictKinds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := New(newSchemaPool(t), Options{})
	mustCommit(t, s, rootCommit("a", 0, 0, item(runtime.ItemUser, "hi")))

	tests := []struct {
		name   string
		c      *runtime.Commit
		reason ConflictReason
		detail string
	}{
		{"stale", rootCommit("a", 0, 0, item(runtime.ItemUser, "x")), ReasonVersion, "stored version 1"},
		{"future", rootCommit("a", 4, 1, item(runtime.ItemUser, "x")), ReasonVersion, "stored version 1"},
		{"missing thread", rootCommit("nobody", 3, 2, item(runtime.ItemUser, "x")), ReasonVersion, "thread not found"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := s.Commit(ctx, tc.c)
			var ce *ConflictError
			if !errors.Is(err, runtime.ErrConflict) || !errors.As(err, &ce) {
				t.Fatalf("got %v, want a *ConflictError", err)
			}
			if ce.Reason != tc.reason || !strings.Contains(ce.Detail, tc.detail) || ce.Attempts != 1 {
				t.Fatalf("got reason %v detail %q attempts %d, want %v %q 1", ce.Reason, ce.Detail, ce.Attempts, tc.reason, tc.detail)
			}
		})
	}
	th, err := s.Load(ctx, "nobody")
	if err != nil || th.State.Version != 0 || len(th.Items) != 0 {
		t.Fatalf("a failed commit left a trace: %+v %v", th, err)
	}
}

func TestMalformedCommits(t *testing.T) {
	t.Parallel()
	s := New(newSchemaPool(t), Options{})
	ctx := context.Background()
	mustCommit(t, s, rootCommit("m", 0, 0, item(runtime.ItemUser, "hi")))

	lengthLie := rootCommit("m", 1, 1, item(runtime.ItemUser, "x"))
	lengthLie.State.Length = 7 // stored length is 1, so old length 6 is wrong
	tests := []struct {
		name string
		c    *runtime.Commit
		want string
	}{
		{"nil", nil, "commit is nil"},
		{"no thread", &runtime.Commit{State: runtime.ThreadState{Version: 1}}, "ThreadID is empty"},
		{"version", &runtime.Commit{ThreadID: "m", Expected: 1, State: runtime.ThreadState{Version: 3, Length: 1}}, "State.Version is 3"},
		{"short length", &runtime.Commit{ThreadID: "m", Expected: 1, Append: []runtime.Item{item(runtime.ItemUser, "x")}, State: runtime.ThreadState{Version: 2}}, "State.Length is 0"},
		{"no kind", rootCommit("m", 1, 1, runtime.Item{Text: "x"}), "Append[0]: item has no kind"},
		{"child twice", &runtime.Commit{ThreadID: "m", Expected: 1, State: runtime.ThreadState{Version: 2, Length: 1},
			Children: []runtime.ChildThread{{ID: "k"}, {ID: "k"}}}, `Children[1].ID "k" appears twice`},
		{"child with history", &runtime.Commit{ThreadID: "m", Expected: 1, State: runtime.ThreadState{Version: 2, Length: 1},
			Children: []runtime.ChildThread{{ID: "k", State: runtime.ThreadState{Length: 2}}}}, "a new child has neither"},
		{"NUL id", rootCommit("a\x00b", 0, 0), "contains a NUL byte"},
		{"length mismatch", lengthLie, "disagrees with the stored length"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := s.Commit(ctx, tc.c)
			if err == nil || errors.Is(err, runtime.ErrConflict) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want a non-conflict error containing %q", err, tc.want)
			}
		})
	}
	if th, err := s.Load(ctx, "m"); err != nil || th.State.Version != 1 || len(th.Items) != 1 {
		t.Fatalf("thread changed by rejected commits: %+v %v", th, err)
	}
}

// TestChunkedItems stores items larger than a row may hold (ChunkBytes is
// tiny here) and multi-byte characters on chunk boundaries, through a child's
// inherited view too.
func TestChunkedItems(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newSchemaPool(t)
	s := New(pool, Options{Limits: Limits{ChunkBytes: 7}})
	big := []runtime.Item{
		item(runtime.ItemUser, strings.Repeat("héllo ✓ 🎉 ", 20)),
		{Kind: runtime.ItemToolResult, CallID: "c1", Content: []runtime.Content{{Type: "image", Data: strings.Repeat("QUJD", 50), MediaType: "image/png"}}},
		item(runtime.ItemAssistant, "<&> \"quoted\"\n\ttabs"),
	}
	c := rootCommit("big", 0, 0, big...)
	c.Children = []runtime.ChildThread{{ID: "big-kid", SpawnAt: 2, State: runtime.ThreadState{Parent: "big", Stack: []string{"big", "big-kid"}}}}
	mustCommit(t, s, c)
	th, err := s.Load(ctx, "big")
	if err != nil {
		t.Fatal(err)
	}
	equal(t, th.Items, big)
	kid, err := s.Load(ctx, "big-kid")
	if err != nil {
		t.Fatal(err)
	}
	equal(t, kid.Items, big[:2])
	var rows int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM items WHERE thread_id = 'big'").Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows <= len(big) {
		t.Fatalf("%d item rows for %d items: nothing was split", rows, len(big))
	}
}

func equal(t *testing.T, got, want []runtime.Item) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d items, want %d", len(got), len(want))
	}
	for i := range want {
		if fmt.Sprintf("%+v", got[i]) != fmt.Sprintf("%+v", want[i]) {
			t.Fatalf("item %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
}

func TestTooLarge(t *testing.T) {
	t.Parallel()
	pool := newSchemaPool(t)
	ctx := context.Background()
	five := make([]runtime.Item, 5)
	for i := range five {
		five[i] = item(runtime.ItemUser, "x")
	}
	bigState := rootCommit("st", 0, 0)
	bigState.State.Deferred = []runtime.Message{{ID: "d", Text: strings.Repeat("y", 400)}}
	z := item(runtime.ItemUser, strings.Repeat("z", 250))
	tests := []struct {
		name   string
		limits Limits
		c      *runtime.Commit
		what   string
	}{
		{"rows", Limits{MaxRows: 4}, rootCommit("r", 0, 0, five...), "rows"},
		{"rows of one chunked item", Limits{MaxRows: 4, ChunkBytes: 100}, rootCommit("r", 0, 0, item(runtime.ItemUser, strings.Repeat("z", 450))), "rows"},
		{"bytes", Limits{MaxBytes: 700}, rootCommit("b", 0, 0, z, z, z), "bytes"},
		{"state", Limits{MaxStateBytes: 300}, bigState, "state bytes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := New(pool, Options{Limits: tc.limits}).Commit(ctx, tc.c)
			var tl *TooLargeError
			if !errors.Is(err, ErrTooLarge) || !errors.As(err, &tl) || !runtime.IsPermanent(err) {
				t.Fatalf("got %v, want a permanent *TooLargeError", err)
			}
			if tl.What != tc.what || tl.Size <= tl.Limit {
				t.Fatalf("got %+v, want What %q and Size > Limit", tl, tc.what)
			}
		})
	}
}

// TestDeepTree checks the cutoffs down a chain of five threads, with spawn
// points inside the inherited part of a parent's view as well as in its own
// items, and a parent that keeps growing after its children were spawned.
func TestDeepTree(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := New(newSchemaPool(t), Options{})
	// t0 has 6 items; t1 spawns at 4 and adds 3 (view 7); t2 spawns at 6
	// (inside t1's own items: 4 of t0, 2 of t1) and adds 2 (view 8); t3
	// spawns at 3, inside t2's inherited part (3 of t0 only); t4 spawns at
	// 5 of t3's view (3 of t0, 2 of t3).
	views := map[string][]runtime.Item{}
	mk := func(id string, n int) []runtime.Item {
		out := make([]runtime.Item, n)
		for i := range out {
			out[i] = item(runtime.ItemUser, fmt.Sprintf("%s-%d", id, i))
		}
		return out
	}
	grow := func(parent, id string, spawnAt, own int, stack []string) {
		t.Helper()
		kid := runtime.ChildThread{ID: id, SpawnAt: spawnAt, State: runtime.ThreadState{Parent: parent, Stack: append(append([]string{}, stack...), id)}}
		pv := views[parent]
		th, err := s.Load(ctx, parent)
		if err != nil {
			t.Fatal(err)
		}
		c := &runtime.Commit{ThreadID: parent, Expected: th.State.Version, Append: mk(parent+"x", 1),
			State:    runtime.ThreadState{Version: th.State.Version + 1, Length: th.State.Length + 1, Parent: th.State.Parent, Stack: stack},
			Children: []runtime.ChildThread{kid}}
		mustCommit(t, s, c)
		views[parent] = append(pv, c.Append...)
		ownItems := mk(id, own)
		mustCommit(t, s, &runtime.Commit{ThreadID: id, Expected: 0, Append: ownItems,
			State: runtime.ThreadState{Version: 1, Length: own, Parent: parent, Stack: kid.State.Stack}})
		views[id] = append(append([]runtime.Item{}, pv[:spawnAt]...), ownItems...)
	}
	views["t0"] = mk("t0", 5)
	mustCommit(t, s, rootCommit("t0", 0, 0, views["t0"]...))
	grow("t0", "t1", 4, 2, []string{"t0"})             // t0 view 6; t1 = 4 + 2
	grow("t1", "t2", 6, 2, []string{"t0", "t1"})       // t1 view 7; spawn inside t1's own
	grow("t2", "t3", 3, 2, []string{"t0", "t1", "t2"}) // spawn inside t2's inherited part
	grow("t3", "t4", 5, 1, []string{"t0", "t1", "t2", "t3"})
	for _, id := range []string{"t0", "t1", "t2", "t3", "t4"} {
		th, err := s.Load(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		equal(t, th.Items, views[id])
	}
	th, _ := s.Load(ctx, "t4")
	if th.Inherited != 5 {
		t.Fatalf("t4 inherited %d, want 5", th.Inherited)
	}
}

// TestOCCRetry makes the store's commit meet a concurrent writer the way it
// does on DSQL (snapshot isolation, the later writer fails with 40001): a
// second connection holds the thread row while the store's commit starts,
// then commits. If that writer changed only the state, the store's retry
// succeeds; if it bumped the version, the retry reports a version conflict
// and does not try again.
func TestOCCRetry(t *testing.T) {
	t.Parallel()
	for _, bump := range []bool{false, true} {
		t.Run(fmt.Sprintf("bump=%v", bump), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			pool := newSchemaPool(t, repeatableRead)
			var sleeps int
			s := New(pool, Options{Retry: RetryPolicy{Sleep: func(context.Context, time.Duration) error { sleeps++; return nil }}})
			mustCommit(t, s, rootCommit("occ", 0, 0, item(runtime.ItemUser, "a")))

			other, err := pool.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer other.Rollback(ctx)
			if _, err := other.Exec(ctx, "UPDATE threads SET state = state WHERE id = 'occ'"); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- s.Commit(ctx, rootCommit("occ", 1, 1, item(runtime.ItemUser, "b"))) }()
			waitForLockWait(t, pool)
			if bump {
				if _, err := other.Exec(ctx, "UPDATE threads SET version = version + 1 WHERE id = 'occ'"); err != nil {
					t.Fatal(err)
				}
			}
			if err := other.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			err = <-done
			if !bump {
				if err != nil || sleeps != 1 {
					t.Fatalf("commit after one OCC failure: err %v, %d retries; want success after 1", err, sleeps)
				}
				return
			}
			var ce *ConflictError
			if !errors.As(err, &ce) || ce.Reason != ReasonVersion || ce.Attempts != 2 || sleeps != 1 {
				t.Fatalf("got %v (%d retries), want a version conflict on the second attempt", err, sleeps)
			}
		})
	}
}

// waitForLockWait returns once another connection of the pool (they share
// an application_name unique to the test) waits on a lock: the store's
// commit blocked behind the other transaction.
func waitForLockWait(t *testing.T, pool interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		rows, err := pool.Query(ctx, `SELECT count(*) FROM pg_stat_activity
 WHERE wait_event_type = 'Lock' AND application_name = current_setting('application_name')
   AND pid <> pg_backend_pid()`)
		if err != nil {
			t.Fatal(err)
		}
		n, err := pgx.CollectOneRow(rows, pgx.RowTo[int64])
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
	}
	t.Fatal("the store's commit never waited on the lock")
}

// TestAgentVersionConformance: agent definition versions on PostgreSQL,
// in the schema Migrate makes.
func TestAgentVersionConformance(t *testing.T) {
	t.Parallel()
	storetest.RunAgents(t, func(t *testing.T) runtime.AgentStore { return New(newSchemaPool(t), Options{}) })
}
