// Package storetest is the conformance suite every runtime.HistoryStore and
// runtime.DedupStore implementation must pass: the in-memory stores of
// internal/local and the AWS bindings alike. A binding's test calls
// RunHistory / RunDedup with a constructor that returns a fresh, empty store.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/agentslice/agentslice/internal/runtime"
)

// RunHistory runs the history store conformance tests. newStore must return
// an empty store (or one whose thread IDs cannot collide with a fresh
// prefix: the suite names every thread after the test).
func RunHistory(t *testing.T, newStore func(t *testing.T) runtime.HistoryStore) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s runtime.HistoryStore, id string)
	}{
		{"LoadUnknownIsEmptyRoot", testLoadUnknown},
		{"CommitRoundTrip", testCommitRoundTrip},
		{"AppendOnly", testAppendOnly},
		{"StaleVersionConflicts", testStaleVersion},
		{"StaleEmptyCommitConflicts", testStaleEmptyCommit},
		{"ConcurrentCommitsOneWins", testConcurrentCommits},
		{"StateRoundTrip", testStateRoundTrip},
		{"IncarnatedCallIDs", testIncarnatedCallIDs},
		{"ChildInheritsUpToSpawnPoint", testChildInherits},
		{"ThreeLevels", testThreeLevels},
		{"ExistingChildConflicts", testExistingChild},
		{"LoadAfterCompactionIsTheModelsView", testLoadAfterCompaction},
		{"ForkInheritsUpToForkPoint", testFork},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, newStore(t), "st-"+tc.name)
		})
	}
}

func items(prefix string, n int) []runtime.Item {
	out := make([]runtime.Item, n)
	for i := range out {
		switch i % 4 {
		case 0:
			out[i] = runtime.Item{Kind: runtime.ItemUser, Input: fmt.Sprintf("%s-in-%d", prefix, i), Text: fmt.Sprintf("%s user %d: héllo ✓", prefix, i)}
		case 1:
			out[i] = runtime.Item{Kind: runtime.ItemAssistant, Text: fmt.Sprintf("%s answer %d", prefix, i), Reasoning: "because",
				Usage: &runtime.Usage{Input: 10, Output: 20, Cached: 3, CacheWrite: 4, Total: 30},
				Trace: &runtime.ReasoningTrace{Blocks: []runtime.ReasoningBlock{{Text: "because", Signature: "c2ln"}, {Redacted: "cmVk"}}}}
		case 2:
			out[i] = runtime.Item{Kind: runtime.ItemToolCall, CallID: fmt.Sprintf("%s-call-%d", prefix, i), Name: "run_command", Args: `{"command":"ls"}`}
		case 3:
			out[i] = runtime.Item{Kind: runtime.ItemToolResult, Input: fmt.Sprintf("%s-res-%d", prefix, i), CallID: fmt.Sprintf("%s-call-%d", prefix, i-1),
				Name: "run_command", Text: "ok", IsError: i%8 == 7,
				Content: []runtime.Content{{Type: "text", Text: "line"}, {Type: "image", Data: "aGk=", MediaType: "image/png"}}}
		}
		// Times as history has them: shared by a commit's items, a
		// result's arrival before the item ahead of it, none (written
		// before items had times).
		switch i % 5 {
		case 0, 1:
			out[i].At = itemTime + runtime.Stamp(i/5)*60_000
		case 2:
			out[i].At = itemTime + runtime.Stamp(i/5)*60_000 + 1_500
		case 3:
			out[i].At = itemTime + runtime.Stamp(i/5)*60_000 + 700
		}
		// Durations (Item.Took): none on every third item, small and
		// large ones on the others.
		if i%3 != 0 {
			out[i].Took = uint32(i*37) << (i % 24)
		}
	}
	return out
}

// itemTime is the first item time items gives.
const itemTime = runtime.Stamp(1_790_000_000_000)

func commit(t *testing.T, s runtime.HistoryStore, id string, expected int64, length int, add []runtime.Item, mod func(*runtime.ThreadState), children ...runtime.ChildThread) error {
	t.Helper()
	st := runtime.ThreadState{Version: expected + 1, Length: length + len(add), Stack: []string{id}}
	if mod != nil {
		mod(&st)
	}
	var inputs []string
	for _, it := range add {
		if it.Input != "" {
			inputs = append(inputs, it.Input)
		}
	}
	return s.Commit(context.Background(), &runtime.Commit{ThreadID: id, Expected: expected, Append: add, State: st, Children: children, Inputs: inputs})
}

func load(t *testing.T, s runtime.HistoryStore, id string) *runtime.Thread {
	t.Helper()
	th, err := s.Load(context.Background(), id)
	if err != nil {
		t.Fatalf("Load(%s): %v", id, err)
	}
	return th
}

func equalItems(t *testing.T, what string, got, want []runtime.Item) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d items, want %d", what, len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if len(g.Content) == 0 {
			g.Content = nil
		}
		if len(w.Content) == 0 {
			w.Content = nil
		}
		if !reflect.DeepEqual(g, w) {
			t.Fatalf("%s: item %d\n got %+v\nwant %+v", what, i, g, w)
		}
	}
}

func testLoadUnknown(t *testing.T, s runtime.HistoryStore, id string) {
	th := load(t, s, id)
	if th.State.Version != 0 || len(th.Items) != 0 || th.State.Parent != "" {
		t.Fatalf("unknown thread loaded as %+v", th)
	}
}

func testCommitRoundTrip(t *testing.T, s runtime.HistoryStore, id string) {
	want := items(id, 9)
	if err := commit(t, s, id, 0, 0, want, nil); err != nil {
		t.Fatal(err)
	}
	th := load(t, s, id)
	if th.State.Version != 1 || th.State.Length != 9 || th.Inherited != 0 {
		t.Fatalf("state after commit: %+v", th.State)
	}
	equalItems(t, "round trip", th.Items, want)
}

func testAppendOnly(t *testing.T, s runtime.HistoryStore, id string) {
	a, b := items(id+"a", 3), items(id+"b", 5)
	if err := commit(t, s, id, 0, 0, a, nil); err != nil {
		t.Fatal(err)
	}
	if err := commit(t, s, id, 1, 3, b, nil); err != nil {
		t.Fatal(err)
	}
	// A state-only commit appends nothing.
	if err := commit(t, s, id, 2, 8, nil, nil); err != nil {
		t.Fatal(err)
	}
	th := load(t, s, id)
	equalItems(t, "appended", th.Items, append(append([]runtime.Item{}, a...), b...))
	if th.State.Version != 3 {
		t.Fatalf("version %d, want 3", th.State.Version)
	}
}

func testStaleVersion(t *testing.T, s runtime.HistoryStore, id string) {
	if err := commit(t, s, id, 0, 0, items(id, 2), nil); err != nil {
		t.Fatal(err)
	}
	err := commit(t, s, id, 0, 0, items(id+"x", 2), nil)
	if !errors.Is(err, runtime.ErrConflict) {
		t.Fatalf("stale commit: got %v, want ErrConflict", err)
	}
	err = commit(t, s, id, 5, 2, items(id+"y", 1), nil)
	if !errors.Is(err, runtime.ErrConflict) {
		t.Fatalf("future version commit: got %v, want ErrConflict", err)
	}
	th := load(t, s, id)
	equalItems(t, "after conflicts", th.Items, items(id, 2))
}

// testStaleEmptyCommit: a commit that appends nothing (a state-only
// commit: a dispatch mark, a cancelled subscription, a closed thread) at a
// version the thread has moved past is a conflict like any other, and
// changes nothing. A store that takes "no rows to append" as "nothing to
// check" lets a racing duplicate slice overwrite the winner's state.
func testStaleEmptyCommit(t *testing.T, s runtime.HistoryStore, id string) {
	if err := commit(t, s, id, 0, 0, items(id, 2), nil); err != nil {
		t.Fatal(err)
	}
	// The winner of a race commits state only (a dispatch mark), so the
	// length the loser saw is still right: only the version tells them
	// apart.
	if err := commit(t, s, id, 1, 2, nil, func(st *runtime.ThreadState) { st.Tokens = 7 }); err != nil {
		t.Fatal(err)
	}
	err := commit(t, s, id, 1, 2, nil, func(st *runtime.ThreadState) { st.Tokens = 99; st.Closed = true })
	if !errors.Is(err, runtime.ErrConflict) {
		t.Fatalf("stale commit appending nothing (expected 1, thread at 2): got %v, want ErrConflict", err)
	}
	// The same from 0 (a slice that loaded the thread before its first
	// commit) and from a version the thread never had.
	for _, expected := range []int64{0, 9} {
		err := commit(t, s, id, expected, 2, nil, func(st *runtime.ThreadState) { st.Closed = true })
		if !errors.Is(err, runtime.ErrConflict) {
			t.Fatalf("commit appending nothing at version %d (thread at 2): got %v, want ErrConflict", expected, err)
		}
	}
	th := load(t, s, id)
	if th.State.Version != 2 || th.State.Tokens != 7 || th.State.Closed || len(th.Items) != 2 {
		t.Fatalf("a refused commit changed the thread: version %d, tokens %d, closed %v, %d items; want 2, 7, false, 2",
			th.State.Version, th.State.Tokens, th.State.Closed, len(th.Items))
	}
}

func testConcurrentCommits(t *testing.T, s runtime.HistoryStore, id string) {
	if err := commit(t, s, id, 0, 0, items(id, 1), nil); err != nil {
		t.Fatal(err)
	}
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = commit(t, s, id, 1, 1, items(fmt.Sprintf("%s-w%d", id, i), 2), nil)
		}()
	}
	wg.Wait()
	wins := 0
	for _, err := range errs {
		switch {
		case err == nil:
			wins++
		case !errors.Is(err, runtime.ErrConflict):
			t.Fatalf("concurrent commit failed with %v, want nil or ErrConflict", err)
		}
	}
	if wins != 1 {
		t.Fatalf("%d concurrent commits won, want exactly 1", wins)
	}
	if th := load(t, s, id); len(th.Items) != 3 || th.State.Version != 2 {
		t.Fatalf("after race: %d items at version %d, want 3 at 2", len(th.Items), th.State.Version)
	}
}

func testStateRoundTrip(t *testing.T, s runtime.HistoryStore, id string) {
	msg := runtime.Message{V: 1, ID: "m1", ThreadID: id, Kind: runtime.KindEvent, ToolCallID: "c0", Text: "evt", Associative: true}
	want := func(st *runtime.ThreadState) {
		st.Pending = &runtime.PendingCall{ID: "c1", Name: "run_command", Args: `{"command":"make"}`,
			Trace: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}
		st.Outbox = []runtime.OutboxEntry{{Message: &msg}, {Output: &runtime.OutputEvent{ID: "o1", ThreadID: id, Kind: "reply", Text: "hi"}},
			{Cancel: &runtime.PendingCall{ID: "c0", Name: "x"}}}
		st.Deferred = []runtime.Message{msg}
		st.Subscriptions = []runtime.Subscription{{CallID: "c0", Tool: "watch", Args: "{}", Trace: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b8-01"}}
		st.Tokens = 1234
		st.Closed = true
		st.Agent, st.AgentHash = "reviewer", "9ed0e3716440469ed421a65318788497"
		st.Usage = runtime.Usage{Input: 10, Output: 2, Cached: 7, CacheWrite: 3, Total: 12}
		st.Outbox[1].Output.Agent, st.Outbox[1].Output.Usage = "reviewer", &runtime.Usage{Input: 10}
		st.ModelWait = &runtime.ModelWait{Since: time.Date(2026, 12, 1, 10, 0, 0, 5, time.UTC), Waits: 3,
			Until: time.Date(2026, 12, 1, 10, 4, 0, 0, time.UTC), Error: "HTTP 503: overloaded"}
		st.Incarnation = "incarnation-of-" + id
	}
	// A failure item (a completion that failed for good) is kept as it is.
	add := append(items(id, 1), runtime.Item{Kind: runtime.ItemMarker, IsError: true, Name: runtime.FailureMarkerName,
		Args: `{"failed":"completion","attempts":4,"error":"HTTP 400: bad"}`, Text: "the model failed after 4 attempts: HTTP 400: bad"})
	if err := commit(t, s, id, 0, 0, add, want); err != nil {
		t.Fatal(err)
	}
	th := load(t, s, id)
	exp := runtime.ThreadState{Version: 1, Length: 2, Stack: []string{id}}
	want(&exp)
	if !reflect.DeepEqual(th.State, exp) {
		t.Fatalf("state\n got %+v\nwant %+v", th.State, exp)
	}
	if !reflect.DeepEqual(th.Items, add) || !runtime.IsFailure(&th.Items[1]) {
		t.Fatalf("items\n got %+v\nwant %+v", th.Items, add)
	}
}

// testIncarnatedCallIDs: a thread's call IDs, derived with its incarnation
// (which stores that leave derivable IDs out must use to derive them
// again), come back as committed, beside IDs derived without it and
// foreign ones, on the first commit and on a later one.
func testIncarnatedCallIDs(t *testing.T, s runtime.HistoryStore, id string) {
	const inc = "the-incarnation"
	calls := func(from int) []runtime.Item {
		var out []runtime.Item
		for i, c := range []string{runtime.CallIDAt(id, inc, from), runtime.CallIDAt(id, "", from+2), "foreign"} {
			out = append(out, runtime.Item{Kind: runtime.ItemToolCall, CallID: c, Name: "work", Args: "{}"},
				runtime.Item{Kind: runtime.ItemToolResult, CallID: c, Input: runtime.ResultID(id, c), Name: "work", Text: fmt.Sprint("r", i)})
		}
		return out
	}
	first, second := calls(0), calls(6)
	set := func(st *runtime.ThreadState) { st.Incarnation = inc }
	if err := commit(t, s, id, 0, 0, first, set); err != nil {
		t.Fatal(err)
	}
	if err := commit(t, s, id, 1, len(first), second, set); err != nil {
		t.Fatal(err)
	}
	th := load(t, s, id)
	if th.State.Incarnation != inc {
		t.Fatalf("incarnation %q, want %q", th.State.Incarnation, inc)
	}
	equalItems(t, "incarnated", th.Items, append(first, second...))
}

func child(parent, id string, at int) runtime.ChildThread {
	return runtime.ChildThread{ID: id, SpawnAt: at, State: runtime.ThreadState{Parent: parent, Stack: []string{parent, id}, SpawnCall: "spawn-" + id}}
}

func testChildInherits(t *testing.T, s runtime.HistoryStore, id string) {
	p := items(id, 6)
	kid := id + "-kid"
	if err := commit(t, s, id, 0, 0, p, nil, child(id, kid, 4)); err != nil {
		t.Fatal(err)
	}
	// The parent goes on; the child's inheritance must not move.
	if err := commit(t, s, id, 1, 6, items(id+"later", 3), nil); err != nil {
		t.Fatal(err)
	}
	th := load(t, s, kid)
	if th.State.Parent != id || th.Inherited != 4 || th.State.Version != 0 {
		t.Fatalf("child state %+v inherited %d", th.State, th.Inherited)
	}
	equalItems(t, "inherited", th.Items, p[:4])
	own := items(kid, 2)
	if err := s.Commit(context.Background(), &runtime.Commit{ThreadID: kid, Expected: 0, Append: own,
		State: runtime.ThreadState{Version: 1, Length: 2, Parent: id, Stack: []string{id, kid}}}); err != nil {
		t.Fatal(err)
	}
	th = load(t, s, kid)
	equalItems(t, "child view", th.Items, append(append([]runtime.Item{}, p[:4]...), own...))
	equalItems(t, "child own", th.Own(), own)
}

func testThreeLevels(t *testing.T, s runtime.HistoryStore, id string) {
	a, b, c := id, id+"-b", id+"-c"
	ia := items(a, 5)
	if err := commit(t, s, a, 0, 0, ia, nil, child(a, b, 5)); err != nil {
		t.Fatal(err)
	}
	ib := items(b, 4)
	err := s.Commit(context.Background(), &runtime.Commit{ThreadID: b, Expected: 0, Append: ib,
		State:    runtime.ThreadState{Version: 1, Length: 4, Parent: a, Stack: []string{a, b}},
		Children: []runtime.ChildThread{{ID: c, SpawnAt: 7, State: runtime.ThreadState{Parent: b, Stack: []string{a, b, c}}}}})
	if err != nil {
		t.Fatal(err)
	}
	th := load(t, s, c)
	want := append(append([]runtime.Item{}, ia...), ib[:2]...)
	equalItems(t, "grandchild view", th.Items, want)
	if th.Inherited != 7 {
		t.Fatalf("grandchild inherited %d, want 7", th.Inherited)
	}
}

func testExistingChild(t *testing.T, s runtime.HistoryStore, id string) {
	kid := id + "-kid"
	if err := commit(t, s, id, 0, 0, items(id, 2), nil, child(id, kid, 2)); err != nil {
		t.Fatal(err)
	}
	err := commit(t, s, id, 1, 2, items(id+"x", 1), nil, child(id, kid, 3))
	if !errors.Is(err, runtime.ErrConflict) {
		t.Fatalf("re-creating child: got %v, want ErrConflict", err)
	}
	if th := load(t, s, id); th.State.Version != 1 || len(th.Items) != 2 {
		t.Fatalf("parent changed by a failed commit: version %d, %d items", th.State.Version, len(th.Items))
	}
}

// RunDedup runs the dedup store conformance tests.
func RunDedup(t *testing.T, newStore func(t *testing.T) runtime.DedupStore) {
	ctx := context.Background()
	t.Run("MarkThenSeen", func(t *testing.T) {
		s := newStore(t)
		seen, err := s.Seen(ctx, "dd-t1", []string{"a", "b"})
		if err != nil || seen[0] || seen[1] {
			t.Fatalf("fresh store: %v %v", seen, err)
		}
		if err := s.Mark(ctx, "dd-t1", []string{"a"}); err != nil {
			t.Fatal(err)
		}
		if err := s.Mark(ctx, "dd-t1", []string{"a"}); err != nil {
			t.Fatalf("marking twice: %v", err)
		}
		seen, err = s.Seen(ctx, "dd-t1", []string{"a", "b"})
		if err != nil || !seen[0] || seen[1] {
			t.Fatalf("after mark: %v %v", seen, err)
		}
	})
	t.Run("ThreadsAreSeparate", func(t *testing.T) {
		s := newStore(t)
		if err := s.Mark(ctx, "dd-t2", []string{"x"}); err != nil {
			t.Fatal(err)
		}
		seen, err := s.Seen(ctx, "dd-t3", []string{"x"})
		if err != nil || seen[0] {
			t.Fatalf("other thread sees the mark: %v %v", seen, err)
		}
	})
	t.Run("ManyIDs", func(t *testing.T) {
		s := newStore(t)
		ids := make([]string, 150)
		for i := range ids {
			ids[i] = fmt.Sprintf("id-%03d", i)
		}
		if err := s.Mark(ctx, "dd-t4", ids[:100]); err != nil {
			t.Fatal(err)
		}
		seen, err := s.Seen(ctx, "dd-t4", ids)
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range seen {
			if v != (i < 100) {
				t.Fatalf("id %d seen=%v", i, v)
			}
		}
	})
}

// testFork: a fork is a root thread created by its own first commit whose
// view is its source's up to Fork.At (here a child's, so the fork reads
// two levels), then its own items; the source going on changes nothing, a
// child of the fork inherits through it, and a fork of the fork works too.
func testFork(t *testing.T, s runtime.HistoryStore, id string) {
	ctx := context.Background()
	kid, fk, fk2, fkid := id+"-kid", id+"-fork", id+"-fork2", id+"-fork-kid"
	p := items(id, 6)
	if err := commit(t, s, id, 0, 0, p, nil, child(id, kid, 4)); err != nil {
		t.Fatal(err)
	}
	own := items(kid, 3)
	if err := s.Commit(ctx, &runtime.Commit{ThreadID: kid, Expected: 0, Append: own,
		State: runtime.ThreadState{Version: 1, Length: 3, Parent: id, Stack: []string{id, kid}}}); err != nil {
		t.Fatal(err)
	}
	fork := func(th, src string, at int, add []runtime.Item, children ...runtime.ChildThread) {
		t.Helper()
		err := s.Commit(ctx, &runtime.Commit{ThreadID: th, Expected: 0, Append: add, Children: children,
			State: runtime.ThreadState{Version: 1, Length: len(add), Stack: []string{th}, Fork: &runtime.ForkPoint{Thread: src, At: at}, Upgrade: runtime.UpgradePinned}})
		if err != nil {
			t.Fatalf("forking %s at %d: %v", src, at, err)
		}
	}
	fork(fk, kid, 5, nil) // the parent's 4 and the child's first
	if err := s.Commit(ctx, &runtime.Commit{ThreadID: kid, Expected: 1, Append: items(kid+"later", 2),
		State: runtime.ThreadState{Version: 2, Length: 5, Parent: id, Stack: []string{id, kid}}}); err != nil {
		t.Fatal(err)
	}
	want := append(append([]runtime.Item{}, p[:4]...), own[:1]...)
	th := load(t, s, fk)
	equalItems(t, "fork view", th.Items, want)
	if th.Inherited != 5 || th.State.Parent != "" || th.State.Fork == nil || *th.State.Fork != (runtime.ForkPoint{Thread: kid, At: 5}) ||
		th.State.Upgrade != runtime.UpgradePinned {
		t.Fatalf("fork loads inherited %d, state %+v", th.Inherited, th.State)
	}
	mine := items(fk, 2)
	err := s.Commit(ctx, &runtime.Commit{ThreadID: fk, Expected: 1, Append: mine,
		State:    runtime.ThreadState{Version: 2, Length: 2, Stack: []string{fk}, Fork: &runtime.ForkPoint{Thread: kid, At: 5}},
		Children: []runtime.ChildThread{child(fk, fkid, 6)}})
	if err != nil {
		t.Fatal(err)
	}
	th = load(t, s, fk)
	equalItems(t, "fork view after its own commit", th.Items, append(append([]runtime.Item{}, want...), mine...))
	equalItems(t, "fork own", th.Own(), mine)
	equalItems(t, "child of the fork", load(t, s, fkid).Items, append(append([]runtime.Item{}, want...), mine[:1]...))
	fork(fk2, fk, 7, nil)
	equalItems(t, "fork of the fork", load(t, s, fk2).Items, append(append([]runtime.Item{}, want...), mine...))
	// A second first commit of a fork is a conflict, as for any thread.
	err = s.Commit(ctx, &runtime.Commit{ThreadID: fk2, Expected: 0,
		State: runtime.ThreadState{Version: 1, Stack: []string{fk2}, Fork: &runtime.ForkPoint{Thread: fk, At: 1}}})
	if !errors.Is(err, runtime.ErrConflict) {
		t.Fatalf("second first commit of a fork: %v, want ErrConflict", err)
	}
}
