package storetest

import (
	"context"
	"fmt"
	"testing"

	"github.com/agentslice/agentslice/internal/runtime"
)

// This file checks what a store gives a slice after compaction: a load
// for a slice (runtime.LoadForSlice) may leave out the history before the
// thread's latest compaction point (ThreadState.ViewStart), but the
// model's view of it must be exactly the model's view of the whole
// history, for a root, for a child spawned after the compaction and for a
// child that compacted itself; a full Load still returns all of it.

// summary is a summary item covering the full view up to covers.
func summary(id string, covers int) runtime.Item {
	return runtime.Item{Kind: runtime.ItemSummary, Input: id + "-sum-" + fmt.Sprint(covers), Text: "SUMMARY of " + id,
		Args: fmt.Sprintf(`{"covers":%d}`, covers), At: itemTime}
}

// checkModelView loads id both ways and compares the model's views.
func checkModelView(t *testing.T, s runtime.HistoryStore, id string, wantLen int) *runtime.Thread {
	t.Helper()
	ctx := context.Background()
	full := load(t, s, id)
	if len(full.Items) != wantLen {
		t.Fatalf("%s: a full Load returned %d items, want the whole view of %d", id, len(full.Items), wantLen)
	}
	want, wantInh := runtime.EffectiveView(full.Items, full.Inherited)
	th, leaser, err := runtime.LoadForSlice(ctx, s, id)
	if err != nil {
		t.Fatalf("%s: load for a slice: %v", id, err)
	}
	if leaser != nil {
		defer leaser.Release(id, th.Lease)
	}
	if th.Base != 0 && th.Base != th.State.ViewStart {
		t.Fatalf("%s: a slice's load starts at %d, want 0 or the view start %d", id, th.Base, th.State.ViewStart)
	}
	got, gotInh := runtime.ModelView(th.Items, th.Inherited, th.Base)
	equalItems(t, id+": the model's view of a slice's load", got, want)
	if gotInh != wantInh {
		t.Fatalf("%s: %d of the model's view inherited, want %d", id, gotInh, wantInh)
	}
	if th.State.Version != full.State.Version || th.State.Length != full.State.Length || th.State.ViewStart != full.State.ViewStart {
		t.Fatalf("%s: a slice's load has state %+v, want %+v", id, th.State, full.State)
	}
	return th
}

func testLoadAfterCompaction(t *testing.T, s runtime.HistoryStore, id string) {
	kid, late := id+"-kid", id+"-late"
	first := items(id, 10)
	// A child spawned before the compaction inherits the old history.
	if err := commit(t, s, id, 0, 0, first, nil, child(id, kid, 9)); err != nil {
		t.Fatal(err)
	}
	// The summary covers the view up to 8; ViewStart moves there.
	second := append([]runtime.Item{summary(id, 8)}, items(id+"x", 3)...)
	atVS := func(st *runtime.ThreadState) { st.ViewStart = 8 }
	// A child spawned after it (at 13) inherits the summary, not what it replaced.
	lateKid := child(id, late, 13)
	lateKid.State.ViewStart = 8
	if err := commit(t, s, id, 1, 10, second, atVS, lateKid); err != nil {
		t.Fatal(err)
	}
	checkModelView(t, s, id, 14)
	checkModelView(t, s, kid, 9) // the child from before still rebuilds all it inherited
	th := checkModelView(t, s, late, 13)
	if got, _ := runtime.ModelView(th.Items, th.Inherited, th.Base); got[0].Kind != runtime.ItemSummary {
		t.Fatalf("the child spawned after the compaction does not start from the summary: %s", got[0].Kind)
	}
	// The late child compacts its own history: its view start moves past
	// the spawn point, and the inherited part drops out of its model view.
	own := items(late, 4)
	if err := s.Commit(context.Background(), &runtime.Commit{ThreadID: late, Expected: 0, Append: own,
		State: runtime.ThreadState{Version: 1, Length: 4, Parent: id, Stack: []string{id, late}, ViewStart: 8}}); err != nil {
		t.Fatal(err)
	}
	more := []runtime.Item{summary(late, 15), items(late+"y", 1)[0]}
	if err := s.Commit(context.Background(), &runtime.Commit{ThreadID: late, Expected: 1, Append: more,
		State: runtime.ThreadState{Version: 2, Length: 6, Parent: id, Stack: []string{id, late}, ViewStart: 15}}); err != nil {
		t.Fatal(err)
	}
	checkModelView(t, s, late, 19)
	// A store that leaves history out can still tell the inputs it holds.
	if cc, ok := s.(runtime.ConsumedChecker); ok {
		seen, err := cc.Consumed(context.Background(), id, 8, []string{first[0].Input, first[8].Input, "never-seen"})
		if err != nil {
			t.Fatal(err)
		}
		if len(seen) != 3 || !seen[0] || seen[1] || seen[2] {
			t.Fatalf("Consumed before 8 = %v, want [true false false] (item 8 is not before the point)", seen)
		}
	}
}
