package storetest

import (
	"context"
	"fmt"
	"slices"
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

// partial reports whether s has a load of its own for slices, which
// must then leave out the history before the view start.
func partial(s runtime.HistoryStore) bool {
	_, ll := s.(runtime.LeaseLoader)
	_, vl := s.(runtime.ViewLoader)
	_, il := s.(runtime.InputViewLoader)
	return ll || vl || il
}

// checkModelView loads id both ways and compares the model's views; a
// store with a load for slices must start it at wantBase.
func checkModelView(t *testing.T, s runtime.HistoryStore, id string, wantLen, wantBase int) *runtime.Thread {
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
	if partial(s) && th.Base != wantBase {
		t.Fatalf("%s: a slice's load starts at %d, want %d (the history before the compaction point left out)", id, th.Base, wantBase)
	}
	if partial(s) && len(th.Items) != wantLen-wantBase {
		t.Fatalf("%s: a slice's load holds %d items, want the %d from %d on", id, len(th.Items), wantLen-wantBase, wantBase)
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
	checkModelView(t, s, id, 14, 8)
	checkModelView(t, s, kid, 9, 0) // the child from before still rebuilds all it inherited
	th := checkModelView(t, s, late, 13, 8)
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
	checkModelView(t, s, late, 19, 15)
	// A grandchild spawned after the late child compacted: its view starts
	// at that summary, and nothing of the root's own items is in it.
	grand := child(late, late+"-grand", 19)
	grand.State.Stack, grand.State.ViewStart = []string{id, late, late + "-grand"}, 15
	if err := s.Commit(context.Background(), &runtime.Commit{ThreadID: late, Expected: 2, Append: items(late+"z", 1),
		State:    runtime.ThreadState{Version: 3, Length: 7, Parent: id, Stack: []string{id, late}, ViewStart: 15},
		Children: []runtime.ChildThread{grand}}); err != nil {
		t.Fatal(err)
	}
	checkModelView(t, s, grand.ID, 19, 15)
	// Forks of the root: one at a position before its compaction point
	// rebuilds exactly the history up to there; one after it inherits the
	// summary.
	fork := func(fk string, at, viewStart int) {
		t.Helper()
		if err := s.Commit(context.Background(), &runtime.Commit{ThreadID: fk, Expected: 0, Append: items(fk, 2),
			State: runtime.ThreadState{Version: 1, Length: 2, Stack: []string{fk}, Fork: &runtime.ForkPoint{Thread: id, At: at}, ViewStart: viewStart}}); err != nil {
			t.Fatalf("forking at %d: %v", at, err)
		}
	}
	fork(id+"-fork-old", 9, 0)
	equalItems(t, "the fork from before the compaction point", load(t, s, id+"-fork-old").Items[:9], first[:9])
	checkModelView(t, s, id+"-fork-old", 11, 0)
	fork(id+"-fork-new", 14, 8)
	checkModelView(t, s, id+"-fork-new", 16, 8)
	// A store that leaves history out can still tell the inputs it holds.
	asked := []string{first[0].Input, first[8].Input, "never-seen", second[1].Input}
	want := []bool{true, false, false, false} // item 8 is not before the point
	if cc, ok := s.(runtime.ConsumedChecker); ok {
		seen, err := cc.Consumed(context.Background(), id, 8, asked[:3])
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(seen, want[:3]) {
			t.Fatalf("Consumed before 8 = %v, want %v", seen, want[:3])
		}
		// Asked again further on, then for less (a store may index what
		// it was asked for): the answer is the items' before the point.
		for _, tc := range []struct {
			before int
			want   []bool
		}{{12, []bool{true, true, false}}, {8, []bool{false, false, false}}, {14, []bool{true, true, false}}} {
			seen, err := cc.Consumed(context.Background(), id, tc.before, []string{first[8].Input, second[1].Input, "never-seen"})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(seen, tc.want) {
				t.Fatalf("Consumed before %d = %v, want %v", tc.before, seen, tc.want)
			}
		}
		// A child's point is a position of its full view, which starts
		// with the 13 items it inherits: before 15 its own items are the
		// first two (own[0] has an input, own[3] is the fourth), before
		// 17 all four.
		for _, tc := range []struct {
			before int
			want   []bool
		}{{15, []bool{true, false}}, {17, []bool{true, true}}} {
			seen, err := cc.Consumed(context.Background(), late, tc.before, []string{own[0].Input, own[3].Input})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(seen, tc.want) {
				t.Fatalf("Consumed of the late child (spawned at 13) before %d = %v, want %v", tc.before, seen, tc.want)
			}
		}
	}
	if il, ok := s.(runtime.InputViewLoader); ok {
		th, seen, err := il.LoadViewFor(context.Background(), id, asked)
		if err != nil {
			t.Fatal(err)
		}
		if th.Base != 8 || !slices.Equal(seen, want) {
			t.Fatalf("LoadViewFor: base %d, consumed %v, want 8 and %v", th.Base, seen, want)
		}
		if _, seen, err = il.LoadViewFor(context.Background(), late, []string{own[0].Input, own[3].Input}); err != nil || !slices.Equal(seen, []bool{true, false}) {
			t.Fatalf("LoadViewFor of the late child = %v, %v, want [true false] (its own items before 15)", seen, err)
		}
	}
}
