package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/agentslice/agentslice/internal/model"
	"github.com/agentslice/agentslice/internal/runtime"
)

// countingModel counts the completions a model is asked for, per thread.
type countingModel struct {
	inner runtime.Model
	mu    sync.Mutex
	calls map[string]int
	seen  map[string]int // the history length of each thread's latest request
}

func newCountingModel(m runtime.Model) *countingModel {
	return &countingModel{inner: m, calls: map[string]int{}, seen: map[string]int{}}
}

func (c *countingModel) Complete(ctx context.Context, req *runtime.CompletionRequest, w runtime.TurnWriter) error {
	c.mu.Lock()
	c.calls[req.ThreadID]++
	c.seen[req.ThreadID] = len(req.History)
	c.mu.Unlock()
	return c.inner.Complete(ctx, req, w)
}

func (c *countingModel) count(thread string) (calls, history int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[thread], c.seen[thread]
}

func (c *countingModel) total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, v := range c.calls {
		n += v
	}
	return n
}

// forkScript plays thr_src's conversation (a tool call, then two replies)
// and answers a fork's "next week" once per fork.
const forkScript = `{"threads": {"thr_src": [
  {"text": "Let me check the clock.", "tool_call": {"name": "get_time", "args": {"timezone": "UTC"}}},
  {"text": "It is noon, UTC."},
  {"text": "Tomorrow at noon too."}]},
 "match": [{"contains": "next week", "steps": [{"text": "Next week, noon as well."}, {"text": "Still noon."}]}]}`

func forkServer(t *testing.T, dir string) (*Server, *countingModel) {
	t.Helper()
	script, err := model.ParseScript([]byte(forkScript))
	if err != nil {
		t.Fatal(err)
	}
	m := newCountingModel(model.NewScripted(script))
	return startServerOpts(t, Config{Data: dir, ExampleTools: &ExampleTools{GetTime: true}}, Options{Model: m}), m
}

func fork(t *testing.T, srv *Server, thread, body string, want int) forkResponse {
	t.Helper()
	var resp forkResponse
	var e apiError
	out := any(&resp)
	if want != http.StatusCreated {
		out = &e
	}
	if code := do(t, http.MethodPost, srv.URL()+"/threads/"+thread+"/fork", body, out); code != want {
		t.Fatalf("fork %s %s: %d (%+v), want %d", thread, body, code, e, want)
	}
	return resp
}

// secondUser is the position of the source's second user message.
func secondUser(t *testing.T, items []runtime.Item) int {
	t.Helper()
	n := 0
	for i, it := range items {
		if it.Kind == runtime.ItemUser {
			if n++; n == 2 {
				return i
			}
		}
	}
	t.Fatalf("no second user message in %s", kinds(items))
	return 0
}

// TestForkCallsTheModelOnlyForNewTurns: a fork at the source's second user
// message inherits the first turn, tool call and result included, and
// calls the model once, for its new message; nothing before the fork point
// is called again (no tool call in its own history), and the source is
// untouched. The fork survives a restart of serve on the disk store and
// goes on there. Bad positions are refused.
func TestForkCallsTheModelOnlyForNewTurns(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	srv, m := forkServer(t, dir)
	postMessage(t, srv, "thr_src", `{"text":"What time is it?"}`)
	// The system is idle while get_time's answer is on its way back, so
	// wait for the turn's last reply, not for idleness alone.
	waitUntil(t, "the first turn's reply", func() bool {
		var th threadResponse
		return do(t, http.MethodGet, srv.URL()+"/threads/thr_src", "", &th) == http.StatusOK && len(th.Items) >= 5
	})
	waitIdle(t, srv)
	postMessage(t, srv, "thr_src", `{"text":"And tomorrow?"}`)
	waitIdle(t, srv)
	src := getThread(t, srv, "thr_src")
	if calls, _ := m.count("thr_src"); calls != 3 || !strings.Contains(kinds(src.Items), "tool_call(get_time) tool_result(get_time)") {
		t.Fatalf("source: %d calls, history %s", calls, kinds(src.Items))
	}
	at := secondUser(t, src.Items)

	// Bad requests lose nothing and say why.
	fork(t, srv, "thr_src", `{}`, http.StatusBadRequest)
	fork(t, srv, "thr_src", `{"at": 99}`, http.StatusBadRequest)
	fork(t, srv, "thr_src", `{"at": -1}`, http.StatusBadRequest)
	fork(t, srv, "thr_nobody", `{"at": 0}`, http.StatusNotFound)
	for i, it := range src.Items {
		if it.Kind == runtime.ItemToolResult { // between the call and its result
			fork(t, srv, "thr_src", `{"at": `+itoa(i)+`}`, http.StatusConflict)
		}
	}
	fork(t, srv, "thr_src", `{"at": 1, "model": "ghost"}`, http.StatusBadRequest)
	if n := m.total(); n != 3 {
		t.Fatalf("refused forks called the model: %d calls", n)
	}

	f := fork(t, srv, "thr_src", `{"at": `+itoa(at)+`, "text": "And next week?"}`, http.StatusCreated)
	waitIdle(t, srv)
	th := getThread(t, srv, f.Thread)
	if calls, seen := m.count(f.Thread); calls != 1 || seen != at+1 {
		t.Fatalf("fork: %d model calls with %d items of history, want 1 with %d", calls, seen, at+1)
	}
	if m.total() != 4 {
		t.Fatalf("%d model calls in all, want the source's 3 and the fork's 1", m.total())
	}
	if th.Inherited != at || th.State.Parent != "" || th.State.Fork == nil || th.State.Fork.Thread != "thr_src" || th.State.Fork.At != at {
		t.Fatalf("fork state %+v, inherited %d", th.State, th.Inherited)
	}
	if got := kinds(th.Items[at:]); got != "user assistant" || th.Items[len(th.Items)-1].Text != "Next week, noon as well." {
		t.Fatalf("fork's own history: %s", got)
	}
	if !equalJSON(t, th.Items[:at], src.Items[:at]) {
		t.Fatal("the fork's inherited history is not the source's")
	}
	if again := getThread(t, srv, "thr_src"); again.State.Version != src.State.Version || len(again.Items) != len(src.Items) {
		t.Fatalf("the source changed: version %d → %d", src.State.Version, again.State.Version)
	}
	idle := fork(t, srv, "thr_src", `{"at": `+itoa(at)+`}`, http.StatusCreated) // no text: idle
	waitIdle(t, srv)
	if calls, _ := m.count(idle.Thread); calls != 0 || getThread(t, srv, idle.Thread).Status != "idle" {
		t.Fatalf("a fork without text ran %d completions", calls)
	}
	srv.Stop()

	// Restarted on the same data directory: the fork's view is rebuilt from
	// the source, and it goes on.
	srv2, m2 := forkServer(t, dir)
	after := getThread(t, srv2, f.Thread)
	if !equalJSON(t, after.Items, th.Items) || after.Inherited != at {
		t.Fatalf("after the restart the fork reads %s (inherited %d), want %s", kinds(after.Items), after.Inherited, kinds(th.Items))
	}
	postMessage(t, srv2, f.Thread, `{"text":"Sure about next week?"}`)
	waitIdle(t, srv2)
	if calls, seen := m2.count(f.Thread); calls != 1 || seen != at+3 || m2.total() != 1 {
		t.Fatalf("after the restart: %d calls (%d in all) seeing %d items, want 1 seeing %d", calls, m2.total(), seen, at+3)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func equalJSON(t *testing.T, a, b any) bool {
	t.Helper()
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
