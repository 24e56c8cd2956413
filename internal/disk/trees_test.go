package disk

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/agentslice/agentslice/internal/runtime"
)

// commitAt commits one user item stamped at to thread id (a root, or the
// child of parent when set), creating children kids.
func commitAt(t *testing.T, h *History, id, parent string, at runtime.Stamp, kids ...runtime.ChildThread) {
	t.Helper()
	ctx := context.Background()
	th, err := h.Load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	st := th.State
	if st.Version == 0 && len(st.Stack) == 0 {
		st.Stack = []string{id}
		if parent != "" {
			st.Parent, st.Stack = parent, []string{parent, id}
		}
	}
	st.Version++
	st.Length += 1
	for _, k := range kids {
		st.Children = append(st.Children, k.ID)
	}
	if err := h.Commit(ctx, &runtime.Commit{ThreadID: id, Expected: th.State.Version,
		Append: []runtime.Item{{Kind: runtime.ItemUser, At: at, Text: fmt.Sprint("at ", at)}}, State: st, Children: kids}); err != nil {
		t.Fatalf("commit %s: %v", id, err)
	}
}

func rootsPage(t *testing.T, h *History, limit int) (string, int) {
	t.Helper()
	var pages []string
	afterAt, afterID := runtime.Stamp(0), ""
	total := 0
	for {
		page, n, err := h.Roots(context.Background(), afterAt, afterID, limit)
		if err != nil {
			t.Fatal(err)
		}
		total = n
		var s []string
		for _, r := range page {
			s = append(s, fmt.Sprintf("%s@%d", r.ID, r.Activity))
		}
		if len(page) == 0 {
			break
		}
		pages = append(pages, strings.Join(s, ","))
		last := page[len(page)-1]
		afterAt, afterID = last.Activity, last.ID
	}
	return strings.Join(pages, " | "), total
}

// TestTreeIndex: the roots come newest tree first (a child's items count
// for its root), ties by ID, paged by (activity, ID); the count is of
// roots only; a root's descendants are found by parent; and commits that
// only the journal held at a SIGKILL are in the index after the replay.
func TestTreeIndex(t *testing.T) {
	dir := t.TempDir()
	d := openUnmanaged(t, dir)
	h := d.History()
	commitAt(t, h, "a", "", 100)
	commitAt(t, h, "b", "", 300)
	commitAt(t, h, "c", "", 200, runtime.ChildThread{ID: "c-kid", SpawnAt: 1,
		State: runtime.ThreadState{Parent: "c", Stack: []string{"c", "c-kid"}}})
	commitAt(t, h, "d", "", 300)
	if got, n := rootsPage(t, h, 2); got != "b@300,d@300 | c@200,a@100" || n != 4 {
		t.Fatalf("roots %q (%d), want b,d | c,a (4)", got, n)
	}
	commitAt(t, h, "c-kid", "c", 500) // the child works: its tree is the newest
	if got, _ := rootsPage(t, h, 3); got != "c@500,b@300,d@300 | a@100" {
		t.Fatalf("after the child's commit: %q", got)
	}
	below, err := h.Descendants(context.Background(), "c")
	if err != nil || strings.Join(below, ",") != "c-kid" {
		t.Fatalf("descendants of c: %v %v", below, err)
	}
	// Checkpointed so far; these two only reach the journal.
	commitAt(t, h, "a", "", 900)
	commitAt(t, h, "e", "", 50)
	kill(t, d)

	d = openUnmanaged(t, dir) // replays the journal
	defer d.Close()
	if got, n := rootsPage(t, d.History(), 10); got != "a@900,c@500,b@300,d@300,e@50" || n != 5 {
		t.Fatalf("after the replay: %q (%d), want a,c,b,d,e (5)", got, n)
	}
}

// TestQueriesUseTheirIndexes: recovery's and the tree index's queries are
// index searches, not scans of every thread (SQLite uses a partial index
// only when the query repeats its condition).
func TestQueriesUseTheirIndexes(t *testing.T) {
	d := openUnmanaged(t, t.TempDir())
	defer d.Close()
	for _, c := range []struct{ query, index string }{
		{sqlNeedAttention, "threads_attention"},
		{sqlPendingCalls, "threads_attention"},
		{sqlDescendants, "threads_parent"},
		{sqlRootsAfter, "roots_activity"},
		{sqlRootsFirst, "roots_activity"},
	} {
		rows, err := d.rdb.Query("EXPLAIN QUERY PLAN "+c.query, planArgs(c.query)...)
		if err != nil {
			t.Fatalf("%s: %v", c.query, err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		got := strings.Join(plan, "; ")
		if !strings.Contains(got, c.index) || strings.Contains(got, "SCAN threads") {
			t.Errorf("%s\nplan: %s\nwant a search using %s", c.query, got, c.index)
		}
	}
}

func planArgs(query string) []any {
	args := make([]any, strings.Count(query, "?"))
	for i := range args {
		args[i] = "x"
	}
	return args
}
