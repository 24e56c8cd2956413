package server

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/agentslice/agentslice/internal/runtime"
)

// TestThreadsListPagedByActivity: GET /threads orders trees by their
// latest item time, newest first (not by ID as text: load-1, load-10,
// load-2), pages them with limit and an opaque cursor, filters by status,
// agent and title text, and shows each thread's agent, title (first user
// message, on one line, trimmed) and its children's titles; on the memory
// store (every thread loaded, sorted) and on the sqlite store, whose tree
// index answers a page without filters.
func TestThreadsListPagedByActivity(t *testing.T) {
	t.Parallel()
	for _, store := range []string{StoreMemory, StoreSQLite} {
		t.Run(store, func(t *testing.T) {
			t.Parallel()
			cfg := Config{Store: store}
			if store == StoreSQLite {
				cfg.Data = t.TempDir() // a directory of its own (the default one is shared by the package's tests)
			}
			testThreadsList(t, startServer(t, cfg))
		})
	}
}

func testThreadsList(t *testing.T, srv *Server) {
	ctx := context.Background()
	const base = runtime.Stamp(1_790_000_000_000)
	commit := func(id string, st runtime.ThreadState, at runtime.Stamp, text string, children ...runtime.ChildThread) {
		t.Helper()
		st.Version, st.Length = 1, 1
		if len(st.Stack) == 0 {
			st.Stack = []string{id}
		}
		if err := srv.store.Commit(ctx, &runtime.Commit{ThreadID: id, Append: []runtime.Item{{Kind: runtime.ItemUser, At: at, Text: text}},
			State: st, Children: children}); err != nil {
			t.Fatal(err)
		}
	}
	long := strings.Repeat("word ", 40)
	for i := 1; i <= 12; i++ {
		id := fmt.Sprintf("load-%d", i)
		text := fmt.Sprintf("task number %d", i)
		st := runtime.ThreadState{}
		switch i {
		case 3:
			st.Children = []string{"load-3-kid"}
		case 5:
			text = "  Deploy\n the   thing  "
		case 6:
			st.Closed = true
		case 7:
			st.Agent = "reviewer"
		case 8:
			text = long
		case 9:
			// A subscription active and nothing else: a tool still
			// works for the thread.
			st.Subscriptions = []runtime.Subscription{{CallID: "call_w", Tool: "watch_ci"}}
		}
		var kids []runtime.ChildThread
		if i == 3 {
			kids = []runtime.ChildThread{{ID: "load-3-kid", SpawnAt: 1,
				State: runtime.ThreadState{Parent: id, Stack: []string{id, "load-3-kid"}, SpawnCall: "call_1"}}}
		}
		commit(id, st, base+runtime.Stamp(i)*1000, text, kids...)
	}
	// The child works last: its tree is the most recently active.
	if err := srv.store.Commit(ctx, &runtime.Commit{ThreadID: "load-3-kid", Expected: 0,
		Append: []runtime.Item{{Kind: runtime.ItemUser, At: base + 99_000, Text: "look into the flaky test"}},
		State:  runtime.ThreadState{Version: 1, Length: 1, Parent: "load-3", Stack: []string{"load-3", "load-3-kid"}, SpawnCall: "call_1"}}); err != nil {
		t.Fatal(err)
	}

	list := func(query string) treeResponse {
		t.Helper()
		var out treeResponse
		if code := do(t, http.MethodGet, srv.URL()+"/threads"+query, "", &out); code != http.StatusOK {
			t.Fatalf("GET /threads%s: %d", query, code)
		}
		return out
	}
	ids := func(r treeResponse) string {
		var s []string
		for _, n := range r.Threads {
			s = append(s, n.ID)
		}
		return strings.Join(s, ",")
	}
	var pages []string
	cursor := ""
	for range 4 {
		q := "?limit=5"
		if cursor != "" {
			q += "&cursor=" + cursor
		}
		p := list(q)
		if p.Total != 12 {
			t.Fatalf("total %d, want 12", p.Total)
		}
		pages = append(pages, ids(p))
		if cursor = p.NextCursor; cursor == "" {
			break
		}
	}
	want := []string{"load-3,load-12,load-11,load-10,load-9", "load-8,load-7,load-6,load-5,load-4", "load-2,load-1"}
	if strings.Join(pages, " | ") != strings.Join(want, " | ") {
		t.Fatalf("pages %q, want %q", pages, want)
	}

	first := list("?limit=1")
	if n := first.Threads[0]; n.ID != "load-3" || n.Title != "task number 3" || n.LastActivity != base+99_000 ||
		len(n.Children) != 1 || n.Children[0].Title != "look into the flaky test" || first.Count != 2 {
		t.Fatalf("first tree %+v (count %d)", n, first.Count)
	}
	all := list("")
	byID := map[string]*treeNode{}
	for _, n := range all.Threads {
		byID[n.ID] = n
	}
	if got := byID["load-5"].Title; got != "Deploy the thing" {
		t.Fatalf("title %q, want it on one line", got)
	}
	if got := byID["load-8"].Title; len([]rune(got)) != runtime.TitleMax || !strings.HasSuffix(got, "…") {
		t.Fatalf("long title %q (%d runes), want %d ending in …", got, len([]rune(got)), runtime.TitleMax)
	}
	if got := getThread(t, srv, "load-9").Status; got != "watching" || byID["load-9"].Status != "watching" {
		t.Fatalf("a thread whose subscription is active: status %q, listed %q; want watching", got, byID["load-9"].Status)
	}
	if got := byID["load-7"].Agent; got != "reviewer" {
		t.Fatalf("agent %q", got)
	}

	for _, c := range []struct{ query, want string }{
		{"?q=DEPLOY", "load-5"},
		{"?status=closed", "load-6"},
		{"?agent=reviewer", "load-7"},
		{"?q=number+1", "load-12,load-11,load-10,load-1"},
		{"?status=idle&q=nothing+like+it", ""},
		{"?status=watching", "load-9"},
		{"?status=idle&q=number+9", ""},
	} {
		if got := ids(list(c.query)); got != c.want {
			t.Fatalf("GET /threads%s: %q, want %q", c.query, got, c.want)
		}
	}
	for _, c := range []struct{ query, field string }{
		{"?limit=0", "limit"}, {"?limit=abc", "limit"}, {"?limit=501", "limit"},
		{"?status=asleep", "status"}, {"?cursor=not-ours", "cursor"},
	} {
		var e apiError
		if code := do(t, http.MethodGet, srv.URL()+"/threads"+c.query, "", &e); code != http.StatusBadRequest || e.Field != c.field {
			t.Fatalf("GET /threads%s: %d %+v, want 400 naming %s", c.query, code, e, c.field)
		}
	}
}
