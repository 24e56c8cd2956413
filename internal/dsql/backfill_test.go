package dsql

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agentslice/agentslice/internal/runtime"
)

// undoMigration5 takes the database back to before migration 5: what the
// store wrote there then, without the columns it added.
func undoMigration5(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	for _, stmt := range []string{
		`ALTER TABLE threads DROP COLUMN view_start`,
		`ALTER TABLE threads DROP COLUMN inputs_from`,
		`ALTER TABLE items DROP COLUMN input`,
		`DELETE FROM schema_migrations WHERE version = 5`,
	} {
		if _, err := pool.Exec(context.Background(), stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
}

// TestBackfillLoadsOldThreadsFromTheCompactionPoint: threads written
// before migration 5 load whole on every slice (their items record no
// input) until Backfill records their inputs and marks them; then a
// slice loads the model's view from the compaction point, and the
// consumed check sees a message consumed before it. A run stopped after
// two transactions (as a crash leaves it) changes no load, and the next
// run completes it; a third finds nothing to do.
func TestBackfillLoadsOldThreadsFromTheCompactionPoint(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newSchemaPool(t)
	// Small chunks: every item spans rows, which the backfill joins to decode it.
	s := New(pool, Options{Limits: Limits{ChunkBytes: 16}})
	compacted(t, s, "idle") // not written after the upgrade
	compacted(t, s, "busy") // written once after it
	undoMigration5(t, pool)
	if err := Migrate(ctx, pool, Postgres); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	mustCommit(t, s, &runtime.Commit{ThreadID: "busy", Expected: 2,
		Append: []runtime.Item{{Kind: runtime.ItemUser, Input: "busy-late", Text: "late"}},
		State:  runtime.ThreadState{Version: 3, Length: 15, Stack: []string{"busy"}, ViewStart: 8}})
	compacted(t, s, "new") // created after the upgrade: nothing to backfill
	check := func(when, id string, wantBase int) {
		t.Helper()
		full, err := s.Load(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		th, seen, err := s.LoadViewFor(ctx, id, []string{id + "-in-0", id + "-after-0"})
		if err != nil {
			t.Fatal(err)
		}
		if th.Base != wantBase {
			t.Fatalf("%s: %s's slice loads from %d (%d items), want %d", when, id, th.Base, len(th.Items), wantBase)
		}
		want, wantInh := runtime.EffectiveView(full.Items, full.Inherited)
		got, gotInh := runtime.ModelView(th.Items, th.Inherited, th.Base)
		equal(t, got, want)
		if gotInh != wantInh {
			t.Fatalf("%s: %s: %d inherited in the model's view, want %d", when, id, gotInh, wantInh)
		}
		if wantConsumed := wantBase > 0; seen[0] != wantConsumed || seen[1] {
			t.Fatalf("%s: %s: consumed %v, want [%v false] (%s-in-0 is before the base)", when, id, seen, wantConsumed, id)
		}
	}
	for _, id := range []string{"idle", "busy"} {
		check("before the backfill", id, 0)
	}
	check("before the backfill", "new", 8)

	rep, err := Backfill(ctx, pool, BackfillOptions{Items: 3, Batches: 2})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Done || rep.Batches != 2 || rep.Items != 6 || rep.Threads != 0 {
		t.Fatalf("a run stopped after 2 transactions of 3 items: %+v", rep)
	}
	for _, id := range []string{"idle", "busy"} {
		check("after a stopped backfill", id, 0)
	}

	// One item per transaction (their bytes), and the two marks.
	rep, err = Backfill(ctx, pool, BackfillOptions{Items: 3, Limits: Limits{MaxBytes: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if left := 2*14 - 6; !rep.Done || rep.Items != left || rep.Batches != left+2 || rep.Threads != 2 || len(rep.Changing) > 0 {
		t.Fatalf("the resumed run: %+v, want %d items in %d transactions and 2 threads", rep, left, left+2)
	}
	for _, id := range []string{"idle", "busy", "new"} {
		check("after the backfill", id, 8)
	}
	rep, err = Backfill(ctx, pool, BackfillOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Done || rep.Items != 0 || rep.Batches != 0 || rep.Threads != 0 {
		t.Fatalf("a run after a complete one: %+v, want nothing done", rep)
	}
}

// TestBackfillLeavesAThreadAnOlderWriterAppendsTo: a writer of before
// migration 5 (items without input, no inputs_from) that appends to a
// thread between the backfill's record of its inputs and its mark keeps
// the thread unmarked: the backfill reads it again and records the new
// item too, and a thread that keeps changing is left unmarked (loading
// whole) and reported.
func TestBackfillLeavesAThreadAnOlderWriterAppendsTo(t *testing.T) { // not parallel: it sets backfillBeforeMark
	ctx := context.Background()
	pool := newSchemaPool(t)
	s := New(pool, Options{})
	compacted(t, s, "once")
	compacted(t, s, "always")
	undoMigration5(t, pool)
	if err := Migrate(ctx, pool, Postgres); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	appended := map[string]int{}
	oldWrite := func(id string) {
		if (id != "once" && id != "always") || (id == "once" && appended[id] > 0) {
			return
		}
		n := 14 + appended[id]
		appended[id]++
		for _, stmt := range []string{
			fmt.Sprintf(`INSERT INTO items (thread_id, pos, chunk, format, body) VALUES ('%s', %d, 0, 1, '{"kind":"user","input":"%s-old-%d","text":"old writer"}')`, id, n, id, n),
			fmt.Sprintf(`UPDATE threads SET version = version + 1, length = length + 1 WHERE id = '%s'`, id),
		} {
			if _, err := pool.Exec(ctx, stmt); err != nil {
				t.Fatalf("%s: %v", stmt, err)
			}
		}
	}
	backfillBeforeMark = oldWrite
	defer func() { backfillBeforeMark = nil }()
	rep, err := Backfill(ctx, pool, BackfillOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Done || rep.Threads != 1 || len(rep.Changing) != 1 || rep.Changing[0] != "always" {
		t.Fatalf("report %+v, want \"once\" marked and \"always\" changing", rep)
	}
	th, seen, err := s.LoadViewFor(ctx, "once", []string{"once-old-14"})
	if err != nil {
		t.Fatal(err)
	}
	if th.Base != 8 || seen[0] {
		t.Fatalf("once: base %d, consumed %v; want base 8, and the old writer's item loaded (from 8 on)", th.Base, seen)
	}
	var input string
	if err := pool.QueryRow(ctx, `SELECT input FROM items WHERE thread_id = 'once' AND pos = 14`).Scan(&input); err != nil || input != "once-old-14" {
		t.Fatalf("the old writer's item: input %q, %v", input, err)
	}
	if th, _, err := s.LoadViewFor(ctx, "always", nil); err != nil || th.Base != 0 {
		t.Fatalf("always: base %d, %v; want 0 (unmarked: it loads whole)", th.Base, err)
	}
}
