package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/agentslice/agentslice/internal/runtime"
)

// TestThreadsListReadsNoThreadState: on the sqlite store, GET /threads
// (pages, and filters by status, agent and title) reads the digests of
// the tree index and loads no thread (the store's load counter stays
// where it was), and every answer equals the memory store's, which loads
// each thread: roots of each status (closed, sleeping, a tool call, a
// choice offered, a budget pause, idle), agents (one bound, the default
// one), children, paged two trees at a time.
func TestThreadsListReadsNoThreadState(t *testing.T) {
	t.Parallel()
	agents := []AgentConfig{{Agent: runtime.Agent{Name: "helper", Instructions: "Help."}},
		{Agent: runtime.Agent{Name: "reviewer", Instructions: "Review."}}}
	mem := startServer(t, Config{Store: StoreMemory, Agents: agents, DefaultAgent: "helper"})
	sq := startServer(t, Config{Store: StoreSQLite, Data: t.TempDir(), Agents: agents, DefaultAgent: "helper"})
	for _, srv := range []*Server{mem, sq} {
		commitStatuses(t, srv)
	}
	loads := func() int64 { return sq.store.(diskThreads).Loads() }
	queries := []string{"", "?limit=2", "?q=task", "?q=TASK+1&limit=1", "?agent=reviewer", "?agent=" + sq.agents.Default(),
		"?status=idle&agent=reviewer"}
	for _, st := range threadStatuses {
		queries = append(queries, "?status="+st, "?status="+st+"&limit=1")
	}
	before := loads()
	for _, q := range queries {
		for cursor, n := "", 0; n == 0 || cursor != ""; n++ {
			page := q
			if cursor != "" {
				page += map[bool]string{true: "?", false: "&"}[q == ""] + "cursor=" + cursor
			}
			var a, b treeResponse
			if code := do(t, http.MethodGet, mem.URL()+"/threads"+page, "", &a); code != http.StatusOK {
				t.Fatalf("memory store: GET /threads%s: %d", page, code)
			}
			if code := do(t, http.MethodGet, sq.URL()+"/threads"+page, "", &b); code != http.StatusOK {
				t.Fatalf("sqlite store: GET /threads%s: %d", page, code)
			}
			ja, _ := json.Marshal(a)
			jb, _ := json.Marshal(b)
			if string(ja) != string(jb) {
				t.Fatalf("GET /threads%s:\nmemory %s\nsqlite %s", page, ja, jb)
			}
			if q == "" && n == 0 && a.Total != 8 {
				t.Fatalf("total %d, want 8 trees: %s", a.Total, ja)
			}
			cursor = a.NextCursor
		}
	}
	for _, name := range []string{"helper", "reviewer"} {
		var a, b versionsResponse
		if code := do(t, http.MethodGet, mem.URL()+"/agents/"+name+"/versions", "", &a); code != http.StatusOK {
			t.Fatalf("memory store: versions of %s: %d", name, code)
		}
		if code := do(t, http.MethodGet, sq.URL()+"/agents/"+name+"/versions", "", &b); code != http.StatusOK {
			t.Fatalf("sqlite store: versions of %s: %d", name, code)
		}
		for i := range a.Versions { // when each server stored the definition
			a.Versions[i].Stored = time.Time{}
		}
		for i := range b.Versions {
			b.Versions[i].Stored = time.Time{}
		}
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if string(ja) != string(jb) || len(a.Versions) != 1 {
			t.Fatalf("versions of %s:\nmemory %s\nsqlite %s", name, ja, jb)
		}
		if want := map[string][2]int{"helper": {2, 1}, "reviewer": {1, 0}}[name]; a.Versions[0].Threads != want[0] || a.Versions[0].Pinned != want[1] {
			t.Fatalf("versions of %s: %s, want %v threads, pinned", name, ja, want)
		}
	}
	if got := loads() - before; got != 0 {
		t.Fatalf("the listings loaded %d threads, want none", got)
	}
}

// commitStatuses commits the root threads of TestThreadsListReadsNoThreadState.
func commitStatuses(t *testing.T, srv *Server) {
	t.Helper()
	ctx := context.Background()
	const base = runtime.Stamp(1_790_000_000_000)
	choice := `{"type":"user_choice","prompt":"Which?","choices":["a","b"]}`
	helper, _ := srv.agents.Agent("helper")
	reviewer, _ := srv.agents.Agent("reviewer")
	for i, c := range []struct {
		id    string
		st    runtime.ThreadState
		extra []runtime.Item
	}{
		{id: "s-closed", st: runtime.ThreadState{Closed: true, AgentHash: helper.Hash}},
		{id: "s-sleep", st: runtime.ThreadState{AgentHash: helper.Hash, Upgrade: runtime.UpgradePinned,
			Pending: &runtime.PendingCall{ID: "c1", Name: "sleep", Dispatched: true}}},
		{id: "s-tool", st: runtime.ThreadState{Agent: "reviewer", AgentHash: reviewer.Hash, Pending: &runtime.PendingCall{ID: "c2", Name: "lookup", Dispatched: true}}},
		{id: "s-choice", st: runtime.ThreadState{Pending: &runtime.PendingCall{ID: "c3", Name: "ask", Dispatched: true}},
			extra: []runtime.Item{{Kind: runtime.ItemToolCall, CallID: "c3", Name: "ask"},
				{Kind: runtime.ItemMarker, CallID: "c3", Name: runtime.ChoiceMarkerName, Args: choice}}},
		{id: "s-answered", st: runtime.ThreadState{Pending: &runtime.PendingCall{ID: "c4", Name: "ask", Dispatched: true}},
			extra: []runtime.Item{{Kind: runtime.ItemToolCall, CallID: "c4", Name: "ask"},
				{Kind: runtime.ItemMarker, CallID: "c4", Name: runtime.ChoiceMarkerName, Args: choice},
				{Kind: runtime.ItemMarker, CallID: "c4", Name: runtime.AnswerMarkerName, Args: `{"choice":0}`}}},
		{id: "s-budget", st: runtime.ThreadState{Budget: &runtime.BudgetState{Wait: &runtime.BudgetWait{Call: "c5"}}}},
		{id: "s-idle", st: runtime.ThreadState{Agent: "reviewer", Children: []string{"s-idle-kid"}}},
		{id: "s-unrun", st: runtime.ThreadState{}},
	} {
		items := append([]runtime.Item{{Kind: runtime.ItemUser, At: base + runtime.Stamp(i)*1000, Text: fmt.Sprintf("task %d", i)}}, c.extra...)
		for j := range items {
			items[j].At = base + runtime.Stamp(i)*1000 + runtime.Stamp(j)
		}
		st := c.st
		st.Version, st.Length, st.Stack = 1, len(items), []string{c.id}
		var kids []runtime.ChildThread
		if c.id == "s-idle" {
			kids = []runtime.ChildThread{{ID: "s-idle-kid", SpawnAt: 1,
				State: runtime.ThreadState{Parent: c.id, Stack: []string{c.id, "s-idle-kid"}, SpawnCall: "call_k"}}}
		}
		if err := srv.store.Commit(ctx, &runtime.Commit{ThreadID: c.id, Append: items, State: st, Children: kids}); err != nil {
			t.Fatal(err)
		}
	}
	// The child's own work: its tree's activity and a title of its own.
	if err := srv.store.Commit(ctx, &runtime.Commit{ThreadID: "s-idle-kid",
		Append: []runtime.Item{{Kind: runtime.ItemUser, At: base + 99_000, Text: "the child's task"}},
		State:  runtime.ThreadState{Version: 1, Length: 1, Parent: "s-idle", Stack: []string{"s-idle", "s-idle-kid"}, SpawnCall: "call_k", Agent: "reviewer"}}); err != nil {
		t.Fatal(err)
	}
}
