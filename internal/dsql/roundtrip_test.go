package dsql

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentslice/agentslice/internal/runtime"
)

// TestRoundTrips counts what Load and Commit send, with pgx's tracer hooks
// (queries, batches, statements in a batch) and on the connection itself
// (round trips). The pool has one connection, already warm: its prepared
// statements exist, as they do in a warm Lambda. (A connection's first use of
// each statement adds one round trip that prepares every new statement of
// the query or batch at once.)
func TestRoundTrips(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cnt := &counter{}
	pool := newSchemaPool(t, func(pc *pgxpool.Config) {
		pc.MaxConns = 1
		cnt.install(pc)
	})
	s := New(pool, Options{})

	// A chain of four threads: a (5 items) -> b (+4) -> c (+3) -> d (+2).
	ids := []string{"rt-a", "rt-b", "rt-c", "rt-d"}
	sizes := []int{5, 4, 3, 2}
	view := 0
	for i, id := range ids {
		own := make([]runtime.Item, sizes[i])
		for k := range own {
			own[k] = runtime.Item{Kind: runtime.ItemUser, Input: fmt.Sprintf("%s-in-%d", id, k), Text: "x"}
		}
		stack := ids[:i+1]
		c := &runtime.Commit{ThreadID: id, Expected: 0, Append: own,
			State: runtime.ThreadState{Version: 1, Length: len(own), Stack: stack}}
		if i > 0 {
			c.State.Parent = ids[i-1]
		}
		view += len(own)
		if i+1 < len(ids) {
			c.Children = []runtime.ChildThread{{ID: ids[i+1], SpawnAt: view,
				State: runtime.ThreadState{Parent: id, Stack: ids[:i+2]}}}
		}
		mustCommit(t, s, c)
	}

	type count struct{ queries, batches, stmts, trips int64 }
	measure := func(f func()) count {
		cnt.reset()
		f()
		return count{cnt.queries.Load(), cnt.batches.Load(), cnt.batchStmts.Load(), cnt.trips.Load()}
	}

	// Warm the load statement on the connection.
	if _, err := s.Load(ctx, "rt-a"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		id        string
		levels    int
		items     int
		inherited int
	}{
		{"rt-a", 1, 5, 0},
		{"rt-c", 3, 12, 9},
		{"rt-d", 4, 14, 12},
	} {
		var th *runtime.Thread
		got := measure(func() {
			var err error
			if th, err = s.Load(ctx, tc.id); err != nil {
				t.Fatal(err)
			}
		})
		if len(th.Items) != tc.items || th.Inherited != tc.inherited {
			t.Fatalf("%s: %d items (%d inherited), want %d (%d)", tc.id, len(th.Items), th.Inherited, tc.items, tc.inherited)
		}
		if got != (count{queries: 1, trips: 1}) {
			t.Fatalf("loading %s (%d levels): %+v, want 1 query in 1 round trip", tc.id, tc.levels, got)
		}
		t.Logf("Load %s (%d levels, %d items): %d query, %d round trip", tc.id, tc.levels, tc.items, got.queries, got.trips)
	}

	// A turn of 3 items that spawns a child, on a thread at version 1:
	// update + guard + 3 item inserts + child row + ancestor rows = 7.
	turn := func(id string, expected int64, length int, kid string) *runtime.Commit {
		return &runtime.Commit{ThreadID: id, Expected: expected,
			Append: []runtime.Item{{Kind: runtime.ItemUser, Text: "q"}, {Kind: runtime.ItemAssistant, Text: "a"}, {Kind: runtime.ItemToolCall, CallID: kid, Name: "spawn_thread"}},
			State:  runtime.ThreadState{Version: expected + 1, Length: length + 3, Stack: []string{id}},
			Children: []runtime.ChildThread{{ID: kid, SpawnAt: length + 3,
				State: runtime.ThreadState{Parent: id, Stack: []string{id, kid}}}}}
	}
	mustCommit(t, s, turn("rt-warm", 0, 0, "rt-warm-kid"))  // warms the version-0 shape
	mustCommit(t, s, turn("rt-warm", 1, 3, "rt-warm-kid2")) // warms the version>0 shape
	for _, tc := range []struct {
		name  string
		c     *runtime.Commit
		stmts int64
	}{
		{"first commit of a root", turn("rt-e", 0, 0, "rt-e-kid"), 7},
		{"next commit", turn("rt-e", 1, 3, "rt-e-kid2"), 7},
		{"state only", &runtime.Commit{ThreadID: "rt-e", Expected: 2, State: runtime.ThreadState{Version: 3, Length: 6, Stack: []string{"rt-e"}}}, 2},
	} {
		got := measure(func() { mustCommit(t, s, tc.c) })
		if got != (count{batches: 1, stmts: tc.stmts, trips: 1}) {
			t.Fatalf("%s: %+v, want 1 batch of %d statements in 1 round trip", tc.name, got, tc.stmts)
		}
		t.Logf("Commit (%s): 1 batch, %d statements, %d round trip", tc.name, got.stmts, got.trips)
	}
	// A conflict costs the same single round trip, and no retry.
	got := measure(func() {
		if err := s.Commit(ctx, turn("rt-e", 1, 3, "rt-e-kid3")); err == nil {
			t.Fatal("stale commit succeeded")
		}
	})
	if got.batches != 1 || got.trips != 1 {
		t.Fatalf("conflicting commit: %+v, want 1 batch in 1 round trip", got)
	}
}

// TestRoundTripsCold measures a new connection's first Load and Commit, as in
// a Lambda cold start: connecting (trust auth here; TLS and an IAM token on
// DSQL add the TLS handshake), then one round trip preparing the statements,
// then the execution.
func TestRoundTripsCold(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	migrated := newSchemaPool(t)
	// A second pool on the same schema, never used: Migrate warmed the first.
	pc := migrated.Config()
	pc.MaxConns = 1
	cnt := &counter{}
	cnt.install(pc)
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	s := New(pool, Options{})
	if _, err := s.Load(ctx, "cold"); err != nil {
		t.Fatal(err)
	}
	load := cnt.trips.Load()
	cnt.reset()
	mustCommit(t, s, rootCommit("cold", 0, 0, item(runtime.ItemUser, "hi")))
	commit := cnt.trips.Load()
	t.Logf("cold: first Load %d round trips (connect + prepare + query), first Commit %d (prepare + batch)", load, commit)
	if load > 3 || commit > 2 {
		t.Fatalf("cold Load took %d round trips (want <= 3), cold Commit %d (want <= 2)", load, commit)
	}
}

// TestBatchIsOneTransaction pins what Commit relies on: a pgx.Batch sent
// outside a transaction runs as one implicit transaction, so an error in
// any statement rolls back the others, and an error raised at commit time
// (as DSQL raises OC000) comes back from Close. A deferred unique constraint
// stands in for the commit-time failure.
func TestBatchIsOneTransaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newSchemaPool(t)
	if _, err := pool.Exec(ctx, "CREATE TABLE batchcheck (k INTEGER, CONSTRAINT batchcheck_u UNIQUE (k) DEFERRABLE INITIALLY DEFERRED)"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, last string }{
		{"statement error", "SELECT 1/0"},
		{"commit-time error", "INSERT INTO batchcheck VALUES (1)"},
	} {
		b := &pgx.Batch{}
		b.Queue("INSERT INTO batchcheck VALUES (1)")
		b.Queue("INSERT INTO batchcheck VALUES (2)")
		b.Queue(tc.last)
		if err := pool.SendBatch(ctx, b).Close(); err == nil {
			t.Fatalf("%s: Close returned no error", tc.name)
		}
		var n int
		if err := pool.QueryRow(ctx, "SELECT count(*) FROM batchcheck").Scan(&n); err != nil || n != 0 {
			t.Fatalf("%s: %d rows survived the failed batch (%v)", tc.name, n, err)
		}
	}
}
