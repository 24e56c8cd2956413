package dsql

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentslice/agentslice/internal/runtime"
)

// compacted commits a root thread of 14 items whose summary (item 10)
// covers the view up to 8 (State.ViewStart 8), in two commits.
func compacted(t *testing.T, s *Store, id string, children ...runtime.ChildThread) []runtime.Item {
	t.Helper()
	var all []runtime.Item
	for k := range 10 {
		all = append(all, runtime.Item{Kind: runtime.ItemUser, Input: fmt.Sprintf("%s-in-%d", id, k), Text: fmt.Sprint("turn ", k)})
	}
	mustCommit(t, s, rootCommit(id, 0, 0, all...))
	more := []runtime.Item{{Kind: runtime.ItemSummary, Input: id + "-sum", Text: "SUMMARY", Args: `{"covers":8}`}}
	for k := range 3 {
		more = append(more, runtime.Item{Kind: runtime.ItemUser, Input: fmt.Sprintf("%s-after-%d", id, k), Text: "after"})
	}
	mustCommit(t, s, &runtime.Commit{ThreadID: id, Expected: 1, Append: more, Children: children,
		State: runtime.ThreadState{Version: 2, Length: 14, Stack: []string{id}, ViewStart: 8}})
	return append(all, more...)
}

// TestLoadViewForIsOneQuery: a slice's load of a compacted thread reads
// from the compaction point and answers which of the batch's messages
// the history it left out consumed, in the one query of a load.
func TestLoadViewForIsOneQuery(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cnt := &counter{}
	pool := newSchemaPool(t, func(pc *pgxpool.Config) {
		pc.MaxConns = 1
		cnt.install(pc)
	})
	s := New(pool, Options{})
	all := compacted(t, s, "vl")
	asked := []string{"vl-in-0", "vl-in-7", "vl-in-8", "vl-after-1", "never"}
	if _, _, err := s.LoadViewFor(ctx, "vl", asked); err != nil { // warm the statement
		t.Fatal(err)
	}
	cnt.reset()
	th, seen, err := s.LoadViewFor(ctx, "vl", asked)
	if err != nil {
		t.Fatal(err)
	}
	if q, trips := cnt.queries.Load(), cnt.trips.Load(); q != 1 || trips != 1 {
		t.Fatalf("LoadViewFor: %d queries in %d round trips, want 1 in 1", q, trips)
	}
	if th.Base != 8 || th.Inherited != 0 || len(th.Items) != 6 {
		t.Fatalf("loaded base %d, %d items (%d inherited), want base 8 and the 6 items from there", th.Base, len(th.Items), th.Inherited)
	}
	equal(t, th.Items, all[8:])
	if want := []bool{true, true, false, false, false}; !slices.Equal(seen, want) {
		t.Fatalf("consumed %v, want %v (only items before 8 are left out)", seen, want)
	}
	// A full Load is still whole, and answers nothing.
	full, err := s.Load(ctx, "vl")
	if err != nil || full.Base != 0 || len(full.Items) != 14 {
		t.Fatalf("Load: %v, base %d, %d items", err, full.Base, len(full.Items))
	}
}

// TestMigrationToInputs: a database written before migration 5 (no
// view_start, inputs_from or input columns) is upgraded by Migrate. Its
// old threads load correctly: a thread whose own items before its view
// start record no input loads whole (the consumed check could not see
// them), also after its next commits; a child created after the upgrade
// loads from the view start it inherits, and so does a new thread.
func TestMigrationToInputs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newSchemaPool(t)
	s := New(pool, Options{})
	all := compacted(t, s, "old")
	// Take the database back to before migration 5: what the store wrote
	// there then, without the new columns.
	for _, stmt := range []string{
		`ALTER TABLE threads DROP COLUMN view_start`,
		`ALTER TABLE threads DROP COLUMN inputs_from`,
		`ALTER TABLE items DROP COLUMN input`,
		`DELETE FROM schema_migrations WHERE version = 5`,
	} {
		if _, err := pool.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	if err := Migrate(ctx, pool, Postgres); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	check := func(id string, wantBase, wantLen int) *runtime.Thread {
		t.Helper()
		full, err := s.Load(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		th, seen, err := s.LoadViewFor(ctx, id, []string{"old-in-0"})
		if err != nil {
			t.Fatal(err)
		}
		if th.Base != wantBase || len(full.Items) != wantLen {
			t.Fatalf("%s: base %d (want %d), full view %d items (want %d)", id, th.Base, wantBase, len(full.Items), wantLen)
		}
		want, wantInh := runtime.EffectiveView(full.Items, full.Inherited)
		got, gotInh := runtime.ModelView(th.Items, th.Inherited, th.Base)
		equal(t, got, want)
		if gotInh != wantInh {
			t.Fatalf("%s: %d inherited in the model's view, want %d", id, gotInh, wantInh)
		}
		if seen[0] && th.Base == 0 {
			t.Fatalf("%s: consumed reported for a load that left nothing out", id)
		}
		return th
	}
	check("old", 0, 14)
	// The next commit of the old thread spawns a child after the summary.
	kid := runtime.ChildThread{ID: "old-kid", SpawnAt: 15,
		State: runtime.ThreadState{Parent: "old", Stack: []string{"old", "old-kid"}, ViewStart: 8}}
	mustCommit(t, s, &runtime.Commit{ThreadID: "old", Expected: 2, Children: []runtime.ChildThread{kid},
		Append: []runtime.Item{{Kind: runtime.ItemToolCall, CallID: "spawn-kid", Name: "spawn_thread"}},
		State:  runtime.ThreadState{Version: 3, Length: 15, Stack: []string{"old"}, ViewStart: 8}})
	check("old", 0, 15) // its items 0-7 still record no input
	th := check("old-kid", 8, 15)
	if th.Inherited != 7 {
		t.Fatalf("the new child loads %d inherited items, want the 7 from the view start", th.Inherited)
	}
	equal(t, th.Items, append(all[8:], runtime.Item{Kind: runtime.ItemToolCall, CallID: "spawn-kid", Name: "spawn_thread"}))
	compacted(t, s, "new")
	check("new", 8, 14)
}
