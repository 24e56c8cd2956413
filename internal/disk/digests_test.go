package disk

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agentslice/agentslice/internal/runtime"
)

// commitWith commits items and the state change to thread id (created as
// a root when new), creating children kids.
func commitWith(t *testing.T, h *History, id string, change func(*runtime.ThreadState), items []runtime.Item, kids ...runtime.ChildThread) {
	t.Helper()
	ctx := context.Background()
	th, err := h.Load(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	st := th.State
	if len(st.Stack) == 0 {
		st.Stack = []string{id}
	}
	st.Version++
	st.Length += len(items)
	for _, k := range kids {
		st.Children = append(st.Children, k.ID)
	}
	change(&st)
	if err := h.Commit(ctx, &runtime.Commit{ThreadID: id, Expected: th.State.Version, Append: items, State: st, Children: kids}); err != nil {
		t.Fatalf("commit %s: %v", id, err)
	}
}

// checkDigests compares each stored digest of the trees of roots with the
// digest of the thread as loaded (runtime.DigestOf), and returns the
// titles and statuses as "id:title:status" in tree order.
func checkDigests(t *testing.T, h *History, roots ...string) string {
	t.Helper()
	ctx := context.Background()
	var out []string
	for _, root := range roots {
		nodes, err := h.Tree(ctx, root)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range nodes {
			th, err := h.Load(ctx, n.ID)
			if err != nil {
				t.Fatal(err)
			}
			if want := runtime.DigestOf(&th.State, th.Own()); !reflect.DeepEqual(n.Digest, want) {
				t.Fatalf("stored digest of %s:\n%+v\nwant (from the thread)\n%+v", n.ID, n.Digest, want)
			}
			out = append(out, fmt.Sprintf("%s:%s:%s", n.ID, n.Digest.Title, n.Digest.DurableStatus()))
		}
	}
	return strings.Join(out, " ")
}

// TestDigestsAfterAKill: the digests (title, status, agent, counts) of
// threads checkpointed, then changed by commits only the journal held at
// a SIGKILL, equal the digests of the threads as loaded after the replay
// (which advances the stored digest by each commit's items): a title
// kept from the first commit, a choice offered in a later one, a child
// created by one; and the filters by status and agent see them.
func TestDigestsAfterAKill(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	d := openUnmanaged(t, dir)
	h := d.History()
	user := func(at runtime.Stamp, text string) runtime.Item {
		return runtime.Item{Kind: runtime.ItemUser, At: at, Text: text}
	}
	keep := func(*runtime.ThreadState) {}
	commitWith(t, h, "a", func(st *runtime.ThreadState) { st.Agent = "writer" }, []runtime.Item{user(100, "  write the\nnotes ")})
	commitWith(t, h, "b", keep, []runtime.Item{user(200, "plan the trip")})
	if err := d.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	// Only in the journal from here on.
	choice := `{"type":"user_choice","prompt":"Which?","choices":["x","y"]}`
	commitWith(t, h, "a", func(st *runtime.ThreadState) {
		st.Pending = &runtime.PendingCall{ID: "c1", Name: "ask", Dispatched: true}
	}, []runtime.Item{{Kind: runtime.ItemToolCall, At: 300, CallID: "c1", Name: "ask"},
		{Kind: runtime.ItemMarker, At: 301, CallID: "c1", Name: runtime.ChoiceMarkerName, Args: choice}})
	commitWith(t, h, "b", func(st *runtime.ThreadState) {
		st.Pending = &runtime.PendingCall{ID: "c2", Name: "sleep", Dispatched: true}
	}, []runtime.Item{user(400, "and book it")}, runtime.ChildThread{ID: "b-kid", SpawnAt: 2,
		State: runtime.ThreadState{Parent: "b", Stack: []string{"b", "b-kid"}, SpawnCall: "c0"}})
	commitWith(t, h, "b-kid", func(st *runtime.ThreadState) { st.Parent, st.Stack = "b", []string{"b", "b-kid"} },
		[]runtime.Item{user(500, "find a train")})
	commitWith(t, h, "e", func(st *runtime.ThreadState) { st.Closed = true }, []runtime.Item{user(50, "old")})
	kill(t, d)

	d = openUnmanaged(t, dir) // replays the journal
	defer d.Close()
	h = d.History()
	checkRootCounts(t, d)
	want := "a:write the notes:waiting_for_choice b:plan the trip:sleeping b-kid:find a train:idle e:old:closed"
	if got := checkDigests(t, h, "a", "b", "e"); got != want {
		t.Fatalf("after the replay:\n%s\nwant\n%s", got, want)
	}
	for _, c := range []struct {
		f    RootFilter
		want string
	}{
		{RootFilter{Status: runtime.StatusSleeping}, "b@500"},
		{RootFilter{Status: runtime.StatusChoice}, "a@301"},
		{RootFilter{Agent: "writer"}, "a@301"},
		{RootFilter{Agent: "writer", AgentIsDefault: true}, "b@500,a@301,e@50"},
		{RootFilter{Title: "trip"}, "b@500"},
		{RootFilter{Status: runtime.StatusIdle}, ""},
	} {
		page, n, err := h.RootsWhere(ctx, c.f, 0, "", 10)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range page {
			got = append(got, fmt.Sprintf("%s@%d", r.ID, r.Activity))
		}
		if strings.Join(got, ",") != c.want || n != len(got) {
			t.Errorf("roots where %+v: %v (%d), want %s", c.f, got, n, c.want)
		}
	}
}

// TestDigestsMigrated: migration v9 makes the digests of the threads a
// version 8 database holds, from their states and items (frozen frames
// and item rows).
func TestDigestsMigrated(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	d := openUnmanaged(t, dir)
	h := d.History()
	commitWith(t, h, "a", func(st *runtime.ThreadState) { st.Agent = "writer" },
		[]runtime.Item{{Kind: runtime.ItemUser, At: 100, Text: "the first"}})
	h.FreezeIdle(0) // a frozen frame
	commitWith(t, h, "a", func(st *runtime.ThreadState) { st.Closed = true },
		[]runtime.Item{{Kind: runtime.ItemAssistant, At: 200, Text: "done"}})
	commitWith(t, h, "b", func(*runtime.ThreadState) {}, []runtime.Item{{Kind: runtime.ItemUser, At: 300, Text: "the second"}})
	if err := d.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	wantA, wantB := digestRow(t, d, "a"), digestRow(t, d, "b")
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	// Back to version 8: what an older build left.
	db := rawDB(t, dir)
	for _, q := range []string{`DROP TABLE root_titles`, `DROP TABLE IF EXISTS root_titles_content`, `ALTER TABLE roots DROP COLUMN title_row`, `DROP INDEX timers_at`, `DROP TABLE root_counts`, `DROP TABLE digests`, `DROP INDEX roots_status`, `DROP INDEX roots_agent`,
		`ALTER TABLE roots DROP COLUMN status`, `ALTER TABLE roots DROP COLUMN agent`,
		`ALTER TABLE roots DROP COLUMN versioned`, `ALTER TABLE roots DROP COLUMN title`, `PRAGMA user_version = 8`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()

	d = openUnmanaged(t, dir)
	defer d.Close()
	if got := digestRow(t, d, "a"); got != wantA || !strings.Contains(got, `"x":true`) {
		t.Fatalf("migrated digest of a %s, want %s", got, wantA)
	}
	if got := digestRow(t, d, "b"); got != wantB {
		t.Fatalf("migrated digest of b %s, want %s", got, wantB)
	}
	checkDigests(t, d.History(), "a", "b")
	checkRootCounts(t, d)
	page, n, err := d.History().RootsWhere(ctx, RootFilter{Status: runtime.StatusClosed}, 0, "", 10)
	if err != nil || n != 1 || page[0].ID != "a" {
		t.Fatalf("closed roots after the migration: %v %d %v", page, n, err)
	}
}

// checkRootCounts compares root_counts with a count of the roots rows.
func checkRootCounts(t *testing.T, d *DB) {
	t.Helper()
	read := func(q string) string {
		rows, err := d.rdb.Query(q)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var status, agent string
			var versioned bool
			var n int
			if err := rows.Scan(&status, &agent, &versioned, &n); err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprintf("%s/%s/%v=%d", status, agent, versioned, n))
		}
		return strings.Join(out, " ")
	}
	kept := read(`SELECT status, agent, versioned, n FROM root_counts WHERE n != 0 ORDER BY 1, 2, 3`)
	counted := read(`SELECT status, agent, versioned, count(*) FROM roots GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`)
	if kept != counted {
		t.Fatalf("root_counts %s, the roots rows count %s", kept, counted)
	}
}

func digestRow(t *testing.T, d *DB, id string) string {
	t.Helper()
	var data []byte
	if err := d.rdb.QueryRow(`SELECT data FROM digests WHERE id = ?`, id).Scan(&data); err != nil {
		t.Fatalf("digest of %s: %v", id, err)
	}
	var dg runtime.Digest
	if err := json.Unmarshal(data, &dg); err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// rawDB opens the database of dir with no agentslice code in between.
func rawDB(t *testing.T, dir string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// TestListingReadsNoThreadState: the listing's queries (a tree's digests,
// roots by status, by agent, the default agent's, counts by version) are
// index searches that read no row of the threads table, where the states
// are.
func TestListingReadsNoThreadState(t *testing.T) {
	d := openUnmanaged(t, t.TempDir())
	defer d.Close()
	where := func(f RootFilter, cursor bool) string {
		w, _ := f.whereOne(f.AgentIsDefault)
		if cursor {
			w += " AND activity <= ? AND NOT (activity = ? AND id <= ?)"
		}
		return fmt.Sprintf(sqlRootsWhere, w) + " LIMIT ?"
	}
	for _, c := range []struct{ query, index string }{
		{sqlTreeDigests, "digests_parent"},
		{where(RootFilter{Status: "idle"}, false), "roots_status"},
		{where(RootFilter{Status: "idle"}, true), "roots_status"},
		{where(RootFilter{Agent: "a"}, true), "roots_agent"},
		{where(RootFilter{Status: "idle", Agent: "a"}, false), "roots_"},
		{where(RootFilter{Agent: "a", AgentIsDefault: true}, false), "roots_agent"},
		{fmt.Sprintf(sqlVersions, "agent = ?"), "digests_agent"},
		{fmt.Sprintf(sqlVersions, "(agent = ? OR (agent = '' AND versioned = 1))"), "digests_agent"},
		{`SELECT coalesce(sum(n), 0) FROM root_counts WHERE status = ?`, "root_counts"},
	} {
		got := queryPlan(t, d, c.query)
		if !strings.Contains(got, c.index) || strings.Contains(got, " threads") || strings.Contains(got, "SCAN d") ||
			strings.Contains(got, "SCAN roots") || strings.Contains(got, "ORDER BY") {
			t.Errorf("%s\nplan: %s\nwant a search using %s in order, and no read of threads", c.query, got, c.index)
		}
	}
}

func queryPlan(t *testing.T, d *DB, query string) string {
	t.Helper()
	rows, err := d.rdb.Query("EXPLAIN QUERY PLAN "+query, planArgs(query)...)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	return strings.Join(plan, "; ")
}
