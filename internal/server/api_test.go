package server

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/agentslice/agentslice/internal/runtime"
)

// TestBadRequests: every malformed request gets a 4xx JSON error naming the
// field or the problem, and nothing is enqueued.
func TestBadRequests(t *testing.T) {
	t.Parallel()
	srv := startServer(t, Config{Limits: Limits{MaxBodyBytes: 512}})
	long := strings.Repeat("x", runtime.MaxIDLen+1)
	cases := []struct {
		name, method, path, body string
		status                   int
		field, want              string
	}{
		{"unknown field", "POST", "/threads/t1/messages", `{"txt":"hi"}`, 400, "txt", "unknown field"},
		{"empty text", "POST", "/threads/t1/messages", `{"text":""}`, 400, "text", "missing or empty"},
		{"no text", "POST", "/threads/t1/messages", `{"id":"m1"}`, 400, "text", "missing or empty"},
		{"text not a string", "POST", "/threads/t1/messages", `{"text":5}`, 400, "text", "want a string"},
		{"not JSON", "POST", "/threads/t1/messages", `hello`, 400, "", "malformed JSON"},
		{"empty body", "POST", "/threads/t1/messages", ``, 400, "", "empty document"},
		{"trailing data", "POST", "/threads/t1/messages", `{"text":"a"} {}`, 400, "", "trailing data"},
		{"id with a space", "POST", "/threads/t1/messages", `{"text":"hi","id":"m 1"}`, 400, "id", "space"},
		{"id too long", "POST", "/threads/t1/messages", `{"text":"hi","id":"` + long + `"}`, 400, "id", "more than"},
		{"body too large", "POST", "/threads/t1/messages", `{"text":"` + strings.Repeat("a", 600) + `"}`, 413, "", "limit of 512 bytes"},
		{"thread ID too long", "POST", "/threads/" + long + "/messages", `{"text":"hi"}`, 400, "thread_id", "more than"},
		{"thread ID with a space", "GET", "/threads/a%20b", ``, 400, "thread_id", "space"},
		{"unknown thread", "GET", "/threads/nobody", ``, 404, "thread_id", "no history"},
		{"negative from", "GET", "/threads/t1?from=-1", ``, 400, "from", "non-negative"},
		{"wrong method", "DELETE", "/threads/t1", ``, 405, "", "allowed: GET"},
		{"GET messages", "GET", "/threads/t1/messages", ``, 405, "", "allowed: POST"},
		{"unknown path", "GET", "/nope", ``, 404, "", "no such endpoint"},
		{"unsigned callback", "POST", CallbackPath, `{"type":"tool_result"}`, 403, "", "signature"},
		{"unknown class", "POST", "/threads/t1/messages", `{"text":"hi","class":"urgent"}`, 400, "class", "unknown priority class"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var e apiError
			code := do(t, tc.method, srv.URL()+tc.path, tc.body, &e)
			if code != tc.status || e.Field != tc.field || !strings.Contains(e.Error, tc.want) {
				t.Fatalf("got %d %+v, want %d field %q error containing %q", code, e, tc.status, tc.field, tc.want)
			}
		})
	}
	if n := len(srv.store.Threads()); n != 0 {
		t.Fatalf("bad requests created %d threads", n)
	}
	if srv.System().Active() != 0 {
		t.Fatal("a bad request started a thread")
	}
}

// TestClosedThread: a message to a closed thread is refused with 409.
func TestClosedThread(t *testing.T) {
	t.Parallel()
	srv := startServer(t, Config{Script: testdata(t, "close_script.json")})
	postMessage(t, srv, "thr_done", `{"text":"close yourself"}`)
	waitIdle(t, srv)
	if th := getThread(t, srv, "thr_done"); th.Status != "closed" {
		t.Fatalf("status %q, want closed; history %s", th.Status, kinds(th.Items))
	}
	var e apiError
	if code := do(t, "POST", srv.URL()+"/threads/thr_done/messages", `{"text":"hello?"}`, &e); code != http.StatusConflict || e.Field != "thread_id" {
		t.Fatalf("got %d %+v, want 409 naming thread_id", code, e)
	}
}

// TestThreadTree: GET /threads nests children under their parents.
func TestThreadTree(t *testing.T) {
	t.Parallel()
	srv := startServer(t, Config{})
	// Build a parent with a spawned child through the store directly: the
	// API only reads what the engine committed.
	ctx := context.Background()
	child := runtime.ThreadState{Parent: "root", Stack: []string{"root", "kid"}, SpawnCall: "call_1"}
	err := srv.store.Commit(ctx, &runtime.Commit{ThreadID: "root", Expected: 0,
		Append:   []runtime.Item{{Kind: runtime.ItemUser, Text: "hi"}},
		State:    runtime.ThreadState{Version: 1, Length: 1, Stack: []string{"root"}, Children: []string{"kid"}},
		Children: []runtime.ChildThread{{ID: "kid", SpawnAt: 1, State: child}}})
	if err != nil {
		t.Fatal(err)
	}
	var tree treeResponse
	if code := do(t, "GET", srv.URL()+"/threads", "", &tree); code != 200 {
		t.Fatalf("status %d", code)
	}
	if tree.Count != 2 || len(tree.Threads) != 1 || tree.Threads[0].ID != "root" ||
		len(tree.Threads[0].Children) != 1 || tree.Threads[0].Children[0].ID != "kid" {
		t.Fatalf("tree = %+v", tree)
	}
	th := getThread(t, srv, "kid")
	if th.Inherited != 1 || th.Total != 1 || th.State.Parent != "root" {
		t.Fatalf("child view = %+v", th)
	}
	var health map[string]any
	if code := do(t, "GET", srv.URL()+"/healthz", "", &health); code != 200 || health["status"] != "ok" || health["threads"] != float64(2) {
		t.Fatalf("healthz %d %v", code, health)
	}
}

// TestStreamSubscriberGone: when an event stream's client goes away, its
// subscription ends and its goroutine exits (TestMain checks for leaks).
func TestStreamSubscriberGone(t *testing.T) {
	t.Parallel()
	srv := startServer(t, Config{Limits: Limits{KeepAlive: "1h"}})
	s := openStream(t, srv.URL()+"/threads/thr_gone/events")
	all := openStream(t, srv.URL()+"/events")
	if n, _ := srv.Events().Subscribers(); n != 2 {
		t.Fatalf("%d subscribers, want 2", n)
	}
	s.close()
	all.close()
	for {
		n, changed := srv.Events().Subscribers()
		if n == 0 {
			break
		}
		select {
		case <-changed:
		case <-time.After(timeout):
			t.Fatalf("%d subscribers still registered after their clients left", n)
		}
	}
	// Publishing to a thread nobody watches is fine.
	if err := srv.Events().Publish(context.Background(), runtime.OutputEvent{ID: "o", ThreadID: "thr_gone", Kind: "reply", Text: "x"}); err != nil {
		t.Fatal(err)
	}
}

// TestStreamEndsOnStop: Stop ends open streams instead of waiting for
// their clients.
func TestStreamEndsOnStop(t *testing.T) {
	t.Parallel()
	srv := startServer(t, Config{})
	s := openStream(t, srv.URL()+"/threads/thr_stop/events")
	srv.Stop()
	select {
	case <-s.done:
	case <-time.After(timeout):
		t.Fatal("the stream outlived the server")
	}
	srv.Stop() // twice is fine
}

// TestMessageClass: a message that creates a thread sets its class; a later
// message cannot change it.
func TestMessageClass(t *testing.T) {
	t.Parallel()
	srv := startServer(t, Config{})
	postMessage(t, srv, "thr_bg", `{"text":"nightly job","class":"background"}`)
	waitIdle(t, srv)
	postMessage(t, srv, "thr_bg", `{"text":"and now interactive?","class":"interactive"}`)
	waitIdle(t, srv)
	postMessage(t, srv, "thr_user", `{"text":"hello"}`)
	waitIdle(t, srv)
	for id, want := range map[string]runtime.Class{"thr_bg": runtime.ClassBackground, "thr_user": runtime.ClassInteractive} {
		th, err := srv.store.Load(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if th.State.Class != want {
			t.Errorf("thread %s has class %q, want %q", id, th.State.Class, want)
		}
	}
}
